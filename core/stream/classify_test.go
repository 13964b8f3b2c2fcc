package stream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

func TestClassify(t *testing.T) {
	boom := errors.New("502 bad gateway")
	post := attempt{interim: true, maxText: 4000}
	edit := attempt{edit: true, interim: true, maxText: 4000}
	final := attempt{edit: true, maxText: 4000}
	tests := []struct {
		name   string
		err    error
		a      attempt
		ctxErr error
		want   outcome
	}{
		{"success", nil, post, nil, outcome{kind: shown, reached: true}},
		{"edit not modified is shown", fmt.Errorf("edit: %w", core.ErrNotModified), edit, nil, outcome{kind: shown, reached: true}},
		{"post not modified is a failure", core.ErrNotModified, post, nil, outcome{kind: failed, reached: true}},
		{"platform 429", &core.RateLimitError{RetryAfter: 3 * time.Second, Err: boom}, edit, nil,
			outcome{kind: wait, after: 3 * time.Second, reached: true}},
		{"wrapped platform 429", fmt.Errorf("slack: %w", &core.RateLimitError{RetryAfter: time.Second}), post, nil,
			outcome{kind: wait, after: time.Second, reached: true}},
		{"interim turn", &core.RateLimitError{RetryAfter: 10 * time.Second, Turn: true}, edit, nil,
			outcome{kind: wait, after: 10 * time.Second, turn: true}},
		{"final text's own turn", &core.RateLimitError{RetryAfter: 2 * time.Second, Turn: true}, final, nil,
			outcome{kind: wait, after: 2 * time.Second}},
		{"rate limit wins over an ended context", &core.RateLimitError{RetryAfter: time.Second}, edit, context.Canceled,
			outcome{kind: wait, after: time.Second, reached: true}},
		{"markup rejected", fmt.Errorf("bad entity: %w", core.ErrFormatting), post, nil, outcome{kind: plain, reached: true}},
		{"markup rejected in plain text", core.ErrFormatting, attempt{plain: true, maxText: 4000}, nil, outcome{kind: failed, reached: true}},
		{"too long", fmt.Errorf("4100 > 4096: %w", core.ErrMessageTooLong), edit, nil, outcome{kind: smaller, reached: true}},
		{"too long at the smallest split", core.ErrMessageTooLong, attempt{maxText: minMaxText}, nil, outcome{kind: failed, reached: true}},
		{"edited message gone", fmt.Errorf("edit: %w", core.ErrNotFound), edit, nil, outcome{kind: gone, reached: true}},
		{"conversation gone on a post", core.ErrNotFound, post, nil, outcome{kind: failed, reached: true}},
		{"context ended", context.DeadlineExceeded, edit, context.DeadlineExceeded, outcome{kind: ended, reached: true}},
		{"failure after the context ended", boom, post, context.Canceled, outcome{kind: ended, reached: true}},
		{"transient", boom, post, nil, outcome{kind: failed, reached: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.err, tt.a, tt.ctxErr); got != tt.want {
				t.Errorf("classify(%v, %+v, %v) = %+v, want %+v", tt.err, tt.a, tt.ctxErr, got, tt.want)
			}
		})
	}
}

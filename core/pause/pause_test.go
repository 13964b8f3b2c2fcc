package pause

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), time.Second); err != nil || time.Since(start) != time.Second {
			t.Fatalf("Sleep = %v after %v; want nil after 1s", err, time.Since(start))
		}
		cause := errors.New("stop")
		ctx, cancel := context.WithCancelCause(t.Context())
		time.AfterFunc(time.Second, func() { cancel(cause) })
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, cause) || time.Since(start) != time.Second {
			t.Fatalf("Sleep = %v after %v; want the cause after 1s", err, time.Since(start))
		}
	})
}

func TestJitterStaysInRange(t *testing.T) {
	for range 1000 {
		if j := Jitter(time.Second); j < 750*time.Millisecond || j > 1250*time.Millisecond {
			t.Fatalf("Jitter(1s) = %v, outside [750ms, 1.25s]", j)
		}
	}
	if Jitter(0) != 0 {
		t.Fatal("Jitter(0) != 0")
	}
}

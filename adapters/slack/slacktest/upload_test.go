package slacktest_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
)

// The upload flow is as strict as Slack's: an upload URL takes the
// declared length only, once; completing an id never uploaded is
// file_not_found.
func TestUploadFlowIsStrict(t *testing.T) {
	s := slacktest.NewServer(slacktest.Options{})
	defer s.Close()
	api := slack.New(s.Options().BotToken, slack.OptionAPIURL(s.APIURL()))
	ctx := t.Context()
	url := func(length int) *slack.GetUploadURLExternalResponse {
		t.Helper()
		u, err := api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "a.txt", FileSize: length})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	u := url(5)
	var status slack.StatusCodeError
	if err := api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Filename: "a.txt", Content: "123456"}); !errors.As(err, &status) || status.Code != 400 {
		t.Errorf("6 bytes for a declared 5: %v, want 400", err)
	}
	// The URL is spent, even by a failed upload.
	if err := api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Filename: "a.txt", Content: "12345"}); !errors.As(err, &status) || status.Code != 404 {
		t.Errorf("a second upload to one URL: %v, want 404", err)
	}
	u = url(5)
	if err := api.UploadToURL(ctx, slack.UploadToURLParameters{UploadURL: u.UploadURL, Filename: "a.txt", Content: "12345"}); err != nil {
		t.Fatal(err)
	}
	_, err := api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: "F999999"}}, Channel: "C1"})
	if err == nil || !strings.Contains(err.Error(), "file_not_found") {
		t.Errorf("completing an unknown id: %v, want file_not_found", err)
	}
	if _, err := api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: u.FileID}}, Channel: "C1", ThreadTimestamp: "1.2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: u.FileID}}, Channel: "C1"}); err == nil {
		t.Error("a file completed twice")
	}
	if f := s.Files(); len(f) != 1 || string(f[0].File.Data) != "12345" || f[0].ThreadTS != "1.2" {
		t.Errorf("files %+v, want the one completed, in thread 1.2", f)
	}
	if _, err := api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "big", FileSize: slacktest.MaxUpload + 1}); err == nil {
		t.Error("a file over 1 GB got an upload URL")
	}
}

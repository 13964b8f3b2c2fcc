package telegramtest

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"testing"
)

// post sends an upload as the Bot API takes it and returns the answer.
func post(t *testing.T, s *Server, method, field, name string, data []byte, fields map[string]string) (int, map[string]any) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if field != "" {
		part, _ := mw.CreateFormFile(field, name)
		part.Write(data)
	}
	mw.Close()
	resp, err := http.Post(s.URL+"/bot"+s.Token+"/"+method, mw.FormDataContentType(), &b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func pngBytes(w, h int) []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
	return b.Bytes()
}

// Uploads are refused as Telegram refuses them: over the size limit
// (413), a photo beyond its dimensions, not an image, no file at all; and
// they count against the chat's flood limit like messages.
func TestUploadsAreStrict(t *testing.T) {
	s := NewServer("1:t")
	defer s.Close()
	s.SetMaxUpload(100)
	chat := map[string]string{"chat_id": "7"}
	for _, tc := range []struct {
		method, field string
		data          []byte
		code          int
		desc          string
	}{
		{"sendDocument", "document", make([]byte, 101), 413, "Request Entity Too Large"},
		{"sendPhoto", "photo", pngBytes(20, 10), 200, ""},
		{"sendPhoto", "photo", []byte("not an image"), 400, "Bad Request: IMAGE_PROCESS_FAILED"},
		{"sendDocument", "", nil, 400, "Bad Request: there is no document in the request"},
	} {
		code, out := post(t, s, tc.method, tc.field, "f", tc.data, chat)
		if code != tc.code || (tc.desc != "" && out["description"] != tc.desc) {
			t.Errorf("%s of %d bytes: %d %v; want %d %q", tc.method, len(tc.data), code, out, tc.code, tc.desc)
		}
	}
	s.SetMaxUpload(MaxUpload)
	if code, out := post(t, s, "sendPhoto", "photo", "wide.png", pngBytes(10001, 1), map[string]string{"chat_id": "8"}); code != 400 || out["description"] != "Bad Request: PHOTO_INVALID_DIMENSIONS" {
		t.Errorf("a 10001x1 photo: %d %v; want PHOTO_INVALID_DIMENSIONS", code, out)
	}
	// Chat 9: a burst of 3 in a second, then 429.
	for i := range 4 {
		code, out := post(t, s, "sendDocument", "document", "n.txt", []byte("n"), map[string]string{"chat_id": "9"})
		if want := map[bool]int{true: 429, false: 200}[i == 3]; code != want {
			t.Errorf("upload %d to chat 9: %d %v; want %d", i+1, code, out, want)
		}
	}
	if n := len(s.Files(9)); n != 3 {
		t.Errorf("%d files kept in chat 9, want 3", n)
	}
}

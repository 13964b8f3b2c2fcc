package outfile

import (
	"bufio"
	"encoding/base64"
	"io"
	"mime"
	"strings"
)

// dataSource decodes a data: URL's payload as it is read: the URL is in
// memory already (one stdout line), its bytes are never a second time.
type dataSource struct {
	io.Reader
	size int64 // the decoded size, -1 when not known before reading
}

func (d *dataSource) Close() error { return nil }

func (d *dataSource) Stat() (sourceStat, error) { return sourceStat{size: d.size}, nil }

// openData opens the payload of a data: URL (RFC 2397; rest is what
// follows "data:"), base64 or percent-encoded. A base64 payload is
// checked whole before any byte is written (a cheap pass over what is in
// memory anyway), so an undecodable one leaves no file behind; one whose
// decoded size is over limit is refused without decoding.
func openData(rest string, limit int64, over func(int64) *refusal) (source, string, error) {
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, "", refuse(ReasonUndecodable, "refused: the data: URL has no comma before its data")
	}
	params := strings.Split(meta, ";")
	b64 := false
	if n := len(params); n > 0 && strings.EqualFold(strings.TrimSpace(params[n-1]), "base64") {
		b64, params = true, params[:n-1]
	}
	mediaType := ""
	if mt := strings.TrimSpace(strings.Join(params, ";")); mt != "" {
		if t, _, err := mime.ParseMediaType(mt); err == nil {
			mediaType = t
		} else if t, _, _ := strings.Cut(mt, ";"); strings.Contains(t, "/") {
			mediaType = strings.TrimSpace(t)
		}
	}
	if !b64 {
		if err := checkPercent(payload); err != nil {
			return nil, "", err
		}
		// Percent-encoding only shrinks: the encoded length bounds the size.
		return &dataSource{Reader: &percentReader{r: bufio.NewReader(strings.NewReader(payload))}, size: -1}, mediaType, nil
	}
	if strings.Contains(payload, "%") { // base64 percent-encoded once more
		dec, err := percentDecode(payload)
		if err != nil {
			return nil, "", err
		}
		payload = dec
	}
	enc := base64.StdEncoding
	if strings.ContainsAny(payload, "-_") {
		enc = base64.URLEncoding
	}
	// The decoder skips line breaks; they do not count.
	body := len(payload) - strings.Count(payload, "\n") - strings.Count(payload, "\r")
	trimmed := strings.TrimRight(payload, "\r\n")
	if !strings.HasSuffix(trimmed, "=") && body%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	pad := len(trimmed) - len(strings.TrimRight(trimmed, "="))
	size := int64(body)/4*3 + int64(body%4*3/4) - int64(pad)
	if size > limit {
		return nil, "", over(size)
	}
	// One pass that writes nothing: an undecodable payload is refused
	// before a byte of it is spooled.
	if _, err := io.Copy(io.Discard, base64.NewDecoder(enc, strings.NewReader(payload))); err != nil {
		return nil, "", refuse(ReasonUndecodable, "refused: its data: URL is not valid base64")
	}
	return &dataSource{Reader: base64.NewDecoder(enc, strings.NewReader(payload)), size: size}, mediaType, nil
}

// checkPercent reports a malformed percent escape in s.
func checkPercent(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2])) {
			return refuse(ReasonUndecodable, "refused: its data: URL has a malformed %% escape")
		}
	}
	return nil
}

func percentDecode(s string) (string, error) {
	if err := checkPercent(s); err != nil {
		return "", err
	}
	b, _ := io.ReadAll(&percentReader{r: bufio.NewReader(strings.NewReader(s))})
	return string(b), nil
}

// percentReader undoes percent-encoding as it reads (the input is checked
// by checkPercent first).
type percentReader struct {
	r *bufio.Reader
}

func (p *percentReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		c, err := p.r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if c == '%' {
			var h [2]byte
			if _, err := io.ReadFull(p.r, h[:]); err != nil {
				return n, io.ErrUnexpectedEOF
			}
			c = unhex(h[0])<<4 | unhex(h[1])
		}
		b[n] = c
		n++
	}
	return n, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

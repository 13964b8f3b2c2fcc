package render

import (
	"strings"
	"testing"
)

// BenchmarkSplit splits a 64 KiB realistic answer at a 4,000-unit limit per dialect.
func BenchmarkSplit(b *testing.B) {
	one := answer(b)
	md := strings.Repeat(one+"\n\n", 64*1024/len(one)+1)[:64*1024]
	for _, d := range dialects {
		b.Run(d.String(), func(b *testing.B) {
			b.SetBytes(int64(len(md)))
			for b.Loop() {
				if len(Split(md, d, 4000)) == 0 {
					b.Fatal("no pieces")
				}
			}
		})
	}
}

// BenchmarkRender renders the same answer without a limit.
func BenchmarkRender(b *testing.B) {
	one := answer(b)
	md := strings.Repeat(one+"\n\n", 64*1024/len(one)+1)[:64*1024]
	for _, d := range dialects {
		b.Run(d.String(), func(b *testing.B) {
			b.SetBytes(int64(len(md)))
			for b.Loop() {
				if Render(md, d) == "" {
					b.Fatal("empty")
				}
			}
		})
	}
}

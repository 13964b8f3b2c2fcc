package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"
)

// TestLinksResolve: every relative link in the repository's Markdown names a
// file that exists, and every #anchor a heading of its page, so the README's
// front door and the docs/ pages it points to stay connected as text moves.
func TestLinksResolve(t *testing.T) {
	problems, pages, err := checkLinks(os.DirFS(".."))
	if err != nil {
		t.Fatal(err)
	}
	// A walk that found nothing would pass vacuously.
	for _, must := range []string{"README.md", "docs/commands.md", "adapters/slack/README.md"} {
		if !slices.Contains(pages, must) {
			t.Errorf("%s was not checked (checked %d pages)", must, len(pages))
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckLinks shows each kind of broken link is found, and that the
// forms GitHub resolves are accepted.
func TestCheckLinks(t *testing.T) {
	docs := &fstest.MapFile{Data: []byte("# Commands\n\n## `serve` and `validate`\n\n## Notes\n\n## Notes\n\n" +
		"```sh\n# not a heading\n```\n\nTitle set\n---------\n")}
	cases := []struct {
		name string
		page string
		want []string // substrings of the problems, in order; none for a clean page
	}{
		{"fine", "[a](docs/c.md) [b](docs/c.md#serve-and-validate) [c](#top) [d](./docs/) " +
			"[e](docs/c.md#notes-1) [f](docs/c.md#title-set) [g](https://example.com/x.md#nope) " +
			"[h](<docs/c.md> \"title\") [i](main.go#L3) ![j](docs/c.md) [k](mailto:a@b.c)\n\n# Top\n", nil},
		{"missing file", "see [x](docs/gone.md)\n", []string{"README.md:1: docs/gone.md: no such file"}},
		{"missing anchor", "\n[x](docs/c.md#serve)\n", []string{"README.md:2: docs/c.md#serve: no heading with anchor serve"}},
		{"missing own anchor", "# Top\n[x](#bottom)\n", []string{"README.md:2: #bottom: no heading with anchor bottom"}},
		{"code fence heading is no anchor", "[x](docs/c.md#not-a-heading)\n", []string{"no heading with anchor not-a-heading"}},
		{"third duplicate", "[x](docs/c.md#notes-2)\n", []string{"no heading with anchor notes-2"}},
		{"outside the repository", "[x](../x.md)\n", []string{"outside the repository"}},
		{"anchor into a non-Markdown file", "[x](main.go#main)\n", []string{"main.go#main: not a Markdown file"}},
		{"reference definition", "[x][r]\n\n[r]: docs/nope.md\n", []string{"README.md:3: docs/nope.md: no such file"}},
		{"inline code is not a link", "`[x](docs/gone.md)` and ``[y](z.md)``\n", nil},
		{"fenced code is not a link", "~~~\n[x](docs/gone.md)\n~~~\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"README.md":     {Data: []byte(c.page)},
				"docs/c.md":     docs,
				"main.go":       {Data: []byte("package main\n\nfunc main() {}\n")},
				".git/x.md":     {Data: []byte("[x](nowhere.md)\n")},
				"testdata/x.md": {Data: []byte("[x](nowhere.md)\n")},
			}
			problems, _, err := checkLinks(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(c.want) {
				t.Fatalf("problems %q, want %d matching %q", problems, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %q, want it to contain %q", problems[i], w)
				}
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"`check` — does my agent follow the protocol?", "check--does-my-agent-follow-the-protocol"},
		{"Continuity: profile changes, crashes and slow agents", "continuity-profile-changes-crashes-and-slow-agents"},
		{"1. Create the Slack app", "1-create-the-slack-app"},
		{"Configuration (`serve`)", "configuration-serve"},
		{"Scaling: what one bridge holds", "scaling-what-one-bridge-holds"},
		{"The [ready profiles](x.md) and *more* `allow_users`", "the-ready-profiles-and-more-allow_users"},
		{"Größe ✅ done", "größe--done"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

var (
	// An inline link or image, [text](target) or [text](<target> "title").
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^)\s]*)`)
	// A reference definition, [name]: target.
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	codeSpan   = regexp.MustCompile("(`+)[^`]+?(`+)")
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextLine = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	htmlID     = regexp.MustCompile(`<a\s[^>]*(?:name|id)="([^"]+)"`)
	lineAnchor = regexp.MustCompile(`^L\d+(-L\d+)?$`)
	scheme     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// checkLinks reads every Markdown file of fsys (a repository's root),
// except under hidden directories, testdata and node_modules, and returns
// one problem per relative link or #anchor that does not resolve, and the
// pages it read.
func checkLinks(fsys fs.FS) (problems, pages []string, err error) {
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			pages = append(pages, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	anchors := map[string]map[string]bool{} // page → its anchors, read once
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		b, err := fs.ReadFile(fsys, page)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[page] = a
		return a, nil
	}
	for _, page := range pages {
		b, err := fs.ReadFile(fsys, page)
		if err != nil {
			return nil, nil, err
		}
		for _, l := range links(string(b)) {
			if problem := resolve(fsys, page, l.target, anchorsOf); problem != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", page, l.line, l.target, problem))
			}
		}
	}
	return problems, pages, nil
}

// resolve says what is wrong with target, a link in page, or "" when it
// resolves as GitHub would resolve it.
func resolve(fsys fs.FS, page, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // another site: not ours to check
	}
	file, frag, _ := strings.Cut(target, "#")
	if q := strings.IndexByte(file, '?'); q >= 0 {
		file = file[:q]
	}
	file, err := url.PathUnescape(file)
	if err != nil {
		return "bad escape in path"
	}
	dest := page
	if file != "" {
		if strings.HasPrefix(file, "/") {
			dest = path.Clean(strings.TrimPrefix(file, "/"))
		} else {
			dest = path.Join(path.Dir(page), file)
		}
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "outside the repository"
		}
		info, err := fs.Stat(fsys, dest)
		if err != nil {
			return "no such file"
		}
		if info.IsDir() {
			dest = path.Join(dest, "README.md") // what GitHub shows for a directory
			if _, err := fs.Stat(fsys, dest); err != nil {
				if frag == "" {
					return ""
				}
				return "a directory without README.md has no anchors"
			}
		}
	}
	if frag == "" {
		return ""
	}
	if frag, err = url.PathUnescape(frag); err != nil {
		return "bad escape in anchor"
	}
	if !strings.HasSuffix(dest, ".md") {
		if lineAnchor.MatchString(frag) {
			return ""
		}
		return "not a Markdown file, so it has no anchor " + frag
	}
	a, err := anchorsOf(dest)
	if err != nil {
		return err.Error()
	}
	if !a[frag] {
		return "no heading with anchor " + frag + " in " + dest
	}
	return ""
}

type link struct {
	line   int
	target string
}

// links lists the link targets of a Markdown text, outside code blocks and
// code spans.
func links(text string) []link {
	var out []link
	eachLine(text, func(n int, l string, inCode bool) {
		if inCode {
			return
		}
		if m := refDef.FindStringSubmatch(l); m != nil {
			out = append(out, link{n, strings.Trim(m[1], "<>")})
			return
		}
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			out = append(out, link{n, strings.Trim(m[1], "<>")})
		}
	})
	return out
}

// headingAnchors lists the anchors GitHub gives a page: one per heading
// (ATX and setext), duplicates numbered -1, -2, …, and explicit
// <a name> / id attributes.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	add := func(heading string) {
		s := slug(heading)
		if n := seen[s]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	prev := "" // the paragraph line a setext underline makes a heading
	eachLine(text, func(_ int, l string, inCode bool) {
		if inCode {
			prev = ""
			return
		}
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			anchors[m[1]] = true
		}
		switch {
		case atxHeading.MatchString(l):
			add(atxHeading.FindStringSubmatch(l)[2])
			prev = ""
		case prev != "" && setextLine.MatchString(l):
			add(prev)
			prev = ""
		case strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "|"):
			prev = ""
		default:
			prev = strings.TrimSpace(l)
		}
	})
	return anchors
}

// eachLine calls f with each line of text (numbered from 1) and whether it
// is inside a fenced code block (its fences included).
func eachLine(text string, f func(n int, line string, inCode bool)) {
	fence := ""
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" \t") == "" {
				fence = ""
			}
			f(i+1, l, true)
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fence = t[:len(t)-len(strings.TrimLeft(t, t[:1]))]
			f(i+1, l, true)
		default:
			f(i+1, l, false)
		}
	}
}

// slug is GitHub's anchor for a heading: its text as rendered (links by
// their text, code and emphasis without their marks), lowercased, with
// every character but letters, digits, '_', '-' and spaces removed, and
// each space made a '-'.
func slug(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestEveryPageIsLinkedFromReadme: a reference page nobody can reach from
// the front door is as good as lost.
func TestEveryPageIsLinkedFromReadme(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range links(string(readme)) {
		file, _, _ := strings.Cut(l.target, "#")
		linked[path.Clean(file)] = true
	}
	pages, err := fs.Glob(os.DirFS(".."), "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md pages found")
	}
	for _, p := range pages {
		if !linked[p] {
			t.Errorf("README.md does not link to %s", p)
		}
	}
}

// TestPackageMapNamesEveryPackage: the README's package map names every Go
// package of the tree, by its path or, below a package it names, by its
// last element, so the map stays the tree's.
func TestPackageMapNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n## Package map\n")
	if !ok {
		t.Fatal("README.md has no ## Package map section")
	}
	section, _, _ := strings.Cut(after, "\n## ")
	fsys := os.DirFS("..")
	var pkgs []string
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !slices.Contains(pkgs, path.Dir(p)) {
			pkgs = append(pkgs, path.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found only %d packages: %v", len(pkgs), pkgs)
	}
	for _, p := range pkgs {
		if !strings.Contains(section, "`"+p+"`") && !strings.Contains(section, "`"+path.Base(p)+"`") {
			t.Errorf("the README's package map does not name %s", p)
		}
	}
}

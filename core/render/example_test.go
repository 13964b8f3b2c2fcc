package render_test

import (
	"fmt"

	"github.com/agentbridge/agentbridge/core/render"
)

func ExampleRender() {
	fmt.Println(render.Render("**Done** — see [the PR](https://example.com/pr/1) & ping @everyone", render.TelegramHTML))
	// Output: <b>Done</b> — see <a href="https://example.com/pr/1">the PR</a> &amp; ping @everyone
}

func ExampleSplit() {
	md := "Here is the output:\n\n```sh\nline one\nline two\nline three\n```"
	for _, p := range render.Split(md, render.DiscordMarkdown, 32) {
		fmt.Printf("%s\n--\n", p)
	}
	// Output:
	// Here is the output:
	// --
	// ```sh
	// line one
	// line two
	// ```
	// --
	// ```sh
	// line three
	// ```
	// --
}

func ExampleQuoteMarkdown() {
	thinking := "The user wants *all* files <listed>."
	fmt.Println(render.Render(render.QuoteMarkdown(thinking)+"Done.", render.SlackMrkdwn))
	// Output:
	// > The user wants *all* files &lt;listed&gt;.
	//
	// Done.
}

// Package render turns the Markdown an agent writes into the markup of each chat platform
// (Slack mrkdwn, Discord Markdown, Telegram HTML, plain text) and cuts it into messages that fit a
// platform's length limit.
//
// Markdown is parsed once per call with goldmark into a flat stream of tokens (text, markup,
// open/close markers, line breaks) built for the target dialect; one emitter writes that stream and
// knows how to close every open marker at a cut and reopen it in the next piece, so each piece is
// valid on its own. Agent text is untrusted: raw HTML is shown as text, and mentions never ping:
// the text changes only where the platform has no switch for it (plain text; Slack's <!channel>
// forms are shown as text), since Discord posts with allowed_mentions none and Telegram has no
// mass mentions.
package render

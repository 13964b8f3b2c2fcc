// Package docs holds the reference pages the README links to (the *.md files
// beside this one) and, in its tests, the checks that keep them and the
// README true: every relative link and #anchor in the repository's Markdown
// resolves, every page is linked from the README, the README's first-bot
// configs are valid, and its package map names every package.
package docs

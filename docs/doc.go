// Package docs holds the reference pages the README links to (the *.md files
// beside this one) and, in its test, the check that every relative link and
// #anchor in the repository's Markdown resolves.
package docs

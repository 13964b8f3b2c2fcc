package main

// Temporary stubs, replaced by their own files as they land.

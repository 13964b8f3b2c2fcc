// Package core is the platform-neutral vocabulary of agentbridge: the adapter
// boundary (Platform, Handler and their optional capabilities), the normalized
// messages adapters hand to the engine, the error types adapters translate
// platform failures into, and the storage interface the engine persists
// through.
//
// Core owns these interfaces because it consumes them. Adapters implement
// Platform; the store package implements Store. Nothing under core imports an
// adapter, the store, bbolt or a platform SDK; deps_test.go enforces that.
package core

// Package repotest holds tests of the repository as a whole rather than of
// one package: that every package of the module says its job in one
// package doc comment. It has no code of its own.
package repotest

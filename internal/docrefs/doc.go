// Package docrefs has no code. Its test checks that the repository's Go
// files, docs, README.md, Makefile and CI scripts cite only files the
// repository has, so a file moved or deleted leaves no comment pointing at
// it, and that none cites a file outside the repository (../shared is not
// part of a clone).
package docrefs

module github.com/gnnplan/gnnplan

go 1.26.8

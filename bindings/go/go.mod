module github.com/chainsig/chainsig/bindings/go

go 1.19

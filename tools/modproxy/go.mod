module github.com/denorm/denorm/tools/modproxy

go 1.26

require golang.org/x/mod v0.26.0

require golang.org/x/tools v0.35.0 // indirect

// Command modproxy serves this repository's modules to the go command as a release would,
// from the working tree: a module proxy directory (GOPROXY=file://DIR) holding each module
// that an app can require (github.com/denorm/denorm and the modules under it) at the version
// the repository's go.mod files require of each other.
//
//	modproxy [-repo DIR] serve OUT   write the proxy into OUT/proxy; print the environment that uses it
//	modproxy [-repo DIR] tidy        `go mod tidy` in every module against it (make tidy)
//
// Inside the repository go.work resolves those requirements; an app outside it, and `go mod
// tidy` (which ignores go.work), look the version up in a proxy, and none serves it before
// the release. The test of this package builds examples/existing-table that way.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("modproxy", flag.ContinueOnError)
	root := fs.String("repo", "../..", "the repository's root")
	if err := fs.Parse(args); err != nil {
		return err
	}
	repo, err := OpenRepo(*root)
	if err != nil {
		return err
	}
	version, err := repo.Version()
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "serve":
		if fs.NArg() != 2 {
			return errors.New("usage: modproxy serve OUT")
		}
		proxy := filepath.Join(fs.Arg(1), "proxy")
		served, err := repo.WriteProxy(proxy, version)
		if err != nil {
			return err
		}
		vars, err := ProxyEnv(proxy, filepath.Join(fs.Arg(1), "mod"))
		if err != nil {
			return err
		}
		fmt.Printf("# the environment of a go command that uses it\n%s\n", strings.Join(vars, "\n"))
		fmt.Println("# the go.sum lines an app gets for these modules")
		for _, s := range served {
			fmt.Print(s.GoSumLines())
		}
		return nil
	case "tidy":
		if fs.NArg() != 1 {
			return errors.New("usage: modproxy tidy")
		}
		return repo.Tidy(version, os.Stdout)
	default:
		return errors.New("usage: modproxy [-repo DIR] serve OUT | tidy")
	}
}

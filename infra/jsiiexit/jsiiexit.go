// Package jsiiexit ends a program that uses the CDK's Go bindings without jsii.Close.
package jsiiexit

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/jsii-runtime-go"
)

// End is what the CDK app and its tests call when they end, instead of jsii.Close.
//
// jsii.Close is not safe with Go 1.26 once the jsii runtime (a Node.js child process) runs: it
// waits on the child while jsii's own goroutine already waits on it, and two concurrent
// (*exec.Cmd).Wait calls race on the command's pipe list. The loser prints "Runtime process
// exited abnormally: waitid: no child processes" (every `cdk synth` did) and a torn read there
// can crash the program. Without Close the runtime reads EOF on stdin when this process exits
// and ends by itself. What Close would still do, remove the runtime's extracted files, is done
// here: the bindings create the runtime during package initialization, before main, so its
// directory cannot be chosen up front; it is found from the child's command line. Where no
// child runs (the bindings were imported but never called), jsii.Close has nothing to race
// with and is called. Without /proc (not Linux) the directory stays in the temporary folder,
// as it also did whenever Close lost the race.
func End() {
	dirs, ok := RuntimeDirs()
	if !ok {
		return
	}
	if len(dirs) == 0 {
		jsii.Close()
		return
	}
	for _, dir := range dirs {
		os.RemoveAll(dir)
	}
}

// RuntimeDirs returns the directories of the jsii runtimes this process started: the
// children running <tmp>/jsii-runtime.*/bin/jsii-runtime.js; ok is false where processes
// cannot be listed (no /proc).
func RuntimeDirs() (dirs []string, ok bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	me := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || ParentPID(pid) != me {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			script := string(arg)
			if filepath.Base(script) != "jsii-runtime.js" {
				continue
			}
			dir := filepath.Dir(filepath.Dir(script))
			if strings.HasPrefix(filepath.Base(dir), "jsii-runtime.") && filepath.Dir(dir) == filepath.Clean(os.TempDir()) {
				dirs = append(dirs, dir)
			}
		}
	}
	return dirs, true
}

// ParentPID reads a process's parent from /proc/PID/stat ("pid (comm) state ppid ..."; comm
// may hold spaces and parentheses, so the fields after the last ')' are read). -1 if unknown.
func ParentPID(pid int) int {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}

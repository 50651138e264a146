#!/usr/bin/env python3
"""Import cycles among the files of one module folder (`super::x` and `crate::<folder>::x`
imports between its sibling files), as CI runs it on runtime/src/plan:

    scripts/module-cycles.py runtime/src/plan

Prints each file's sibling imports, then each cycle; exits 1 when there is a cycle.
Test modules (`#[cfg(test)] mod tests` at a file's end) do not count."""
import os, re, sys

folder = sys.argv[1] if len(sys.argv) > 1 else "runtime/src/plan"
name = os.path.basename(os.path.normpath(folder))
mods = sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".rs") and f != "mod.rs")
edges = {}
for m in mods:
    text = open(os.path.join(folder, m + ".rs")).read()
    cut = re.search(r"\n#\[cfg\(test\)\]\s*\nmod tests", text)
    body = text[:cut.start()] if cut else text
    found = set(re.findall(r"\bsuper::(\w+)", body)) | set(re.findall(r"crate::%s::(\w+)" % name, body))
    edges[m] = sorted(d for d in found if d in mods and d != m)
    print("%s: %s" % (m, " ".join(edges[m]) or "-"))

# strongly connected components (Tarjan)
index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            out.append(sorted(comp))
for v in mods:
    if v not in index:
        visit(v)
for c in out:
    print("cycle: " + " <-> ".join(c))
print("%s: %d files, %d import cycles" % (folder, len(mods), len(out)))
sys.exit(1 if out else 0)

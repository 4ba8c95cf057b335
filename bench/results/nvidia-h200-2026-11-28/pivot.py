# The runs of a sweep side by side: python3 pivot.py DIR TAG:RUN[,RUN...] ... prints a Markdown table of
# each cell's mean µs per tag (the runs' results.json under DIR), with the change against the first tag.
import json,sys
# usage: pivot.py DIR tag1:run1a,run1b tag2:... ; prints µs (mean of runs) per cell, ratio to first tag
d=sys.argv[1]; cols=[]
for a in sys.argv[2:]:
    tag,runs=a.rsplit(':', 1); cols.append((tag,runs.split(',')))
def load(p):
    j=json.load(open(f'{d}/{p}/results.json'))
    return {(c['op'],c['m'],c['n'],c['dtype']):c['us'] for c in j['runs'][0]['results']}
data=[]
for tag,runs in cols:
    ls=[load(r) for r in runs]
    data.append({k:sum(l[k] for l in ls)/len(ls) for k in ls[0]})
keys=list(data[0].keys())
print('| op | shape | '+' | '.join(t for t,_ in cols)+' |')
print('|---|---|'+'---:|'*len(cols))
for k in keys:
    base=data[0][k]
    cells=[f'{base:.2f}']+[f'{x[k]:.2f} ({x[k]/base-1:+.0%})' for x in data[1:]]
    print(f'| {k[0]} | {k[1]}x{k[2]} | '+' | '.join(cells)+' |')

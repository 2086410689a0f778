import json,glob,statistics,sys,re,collections
root=sys.argv[1]
d=collections.defaultdict(list)
for f in sorted(glob.glob(root+"/*/results.jsonl")):
    name=f.split("/")[-2]; cfg=re.sub(r"-r\d+$","",name)
    r=[json.loads(l) for l in open(f)][0]
    d[cfg].append(r)
base=None
rows=[]
for cfg,rs in d.items():
    ops=statistics.median(r["writer_ops_per_sec"] for r in rs)
    cpf=statistics.median(1/r["fsyncs_per_commit"] if r["fsyncs_per_commit"] else 0 for r in rs)
    fr=statistics.median(r["floor_ratio"] for r in rs)
    fl=statistics.median(r["floor_per_s"] for r in rs)
    rng=(min(r["writer_ops_per_sec"] for r in rs), max(r["writer_ops_per_sec"] for r in rs))
    rows.append((cfg,ops,rng,cpf,fr,fl,len(rs)))
one=[r for r in rows if r[0]=="P-w1-sync-t"][0][1]
onea=[r for r in rows if r[0]=="P-w1-async-t"][0][1]
print("| case | rounds | commits/s median | range | commits per log sync | x floor (median) | floor/s (median) | / 1 writer sync | / 1 writer async |")
print("|---|---|---|---|---|---|---|---|---|")
for cfg,ops,rng,cpf,fr,fl,n in rows:
    print(f"| {cfg} | {n} | {ops:.0f} | {rng[0]:.0f}-{rng[1]:.0f} | {cpf:.1f} | {fr:.2f} | {fl:.0f} | {ops/one:.1f}x | {ops/onea:.2f}x |")

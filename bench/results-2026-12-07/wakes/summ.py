import re,sys,statistics as st
rows=[]
for l in open(sys.argv[1]):
    m=re.match(r'round=(\d) (\S+)\s+w=(\d) (\S+)\s+(\d+)/s commit=\s*([\d.]+)us lockwait=\s*([\d.]+) work=\s*([\d.]+) flushwait=\s*([\d.]+) \[sync/flush=\s*([\d.]+) join/flush=\s*([\d.]+) sleep/commit=\s*([\d.]+) sleeps/c=([\d.]+) lockmiss/c=([\d.]+)\] c/flush=([\d.]+)',l)
    if not m: continue
    r,b,w,k,ops,commit,lw,work,fw,sync,join,sl,sls,lm,cpf=m.groups()
    rows.append(dict(r=int(r),b=b,w=int(w),k=k,ops=float(ops),sync=float(sync),join=float(join),lm=float(lm),sls=float(sls),cpf=float(cpf),lw=float(lw),work=float(work),fw=float(fw),commit=float(commit)))
bins=sorted(set(x['b'] for x in rows),key=lambda b:[x['b'] for x in rows].index(b))
cfgs=[(1,'threads'),(4,'procs'),(8,'procs'),(4,'threads'),(8,'threads')]
print("| case | " + " | ".join(f"{b} ops/s median (range)" for b in bins) + " | " + " | ".join(f"{b} x1 per round" for b in bins)+" |")
print("|---|"+"---:|"*(2*len(bins)))
for w,k in cfgs:
    cells=[];ratios=[]
    for b in bins:
        v=[x['ops'] for x in rows if x['b']==b and x['w']==w and x['k']==k]
        cells.append(f"{st.median(v):,.0f} ({min(v):,.0f}-{max(v):,.0f})" if v else "-")
        rr=[]
        for r in sorted(set(x['r'] for x in rows)):
            one=[x['ops'] for x in rows if x['b']==b and x['w']==1 and x['r']==r]
            me=[x['ops'] for x in rows if x['b']==b and x['w']==w and x['k']==k and x['r']==r]
            if one and me: rr.append(me[0]/one[0])
        ratios.append("/".join(f"{q:.1f}" for q in rr))
    print(f"| {w} {k} | "+" | ".join(cells)+" | "+" | ".join(ratios)+" |")
print()
print("| case | build | cycle us/flush | sync us/flush | join us/flush | rest us/flush | commits/flush | lock misses/commit | sleeps/commit |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for w,k in cfgs[1:]:
    for b in bins:
        v=[x for x in rows if x['b']==b and x['w']==w and x['k']==k and x['sync']>0]
        if not v: continue
        cyc=[1e6/(x['ops']/x['cpf']) for x in v]
        rest=[1e6/(x['ops']/x['cpf'])-x['sync']-x['join'] for x in v]
        md=lambda key: st.median([x[key] for x in v])
        print(f"| {w} {k} | {b} | {st.median(cyc):.0f} | {md('sync'):.0f} | {md('join'):.0f} | {st.median(rest):.0f} | {md('cpf'):.2f} | {md('lm'):.2f} | {md('sls'):.2f} |")

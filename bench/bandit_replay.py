#!/usr/bin/env python3
"""What-if replay of the GEMM tuner's bandit (include/cufuse/tune/bandit.hpp, gemm_bandit_config:
one sample per arm, a confirmation of the best arm and its contenders within 15%, 3% ties, at
most 2 pulls per arm) on the per-variant samples that `cufuse-tune --exhaustive --json` records,
with another confirmation count, and with each arm's first sample made slower (a cold first
launch). A Python port for such studies: cufuse-tune's own `replay` field runs the C++ bandit
with the shipped settings. Every arm is explored (no cost-model pruning).

    python3 bench/bandit_replay.py bench/results/gemm.json bench/results/small_m_stored_h100.json
"""
import json, math, random, statistics as st, sys
def med(v):
    s=sorted(v); n=len(s); h=n//2
    return s[h] if n%2 else 0.5*(s[h]+s[h-1])
class Bandit:
    def __init__(s, arms, confirm=2, margin=0.15, eps=0.03, min_noise=0.005, maxp=None):
        s.S=[[] for _ in range(arms)]; s.p=0; s.c=-1; s.conf=confirm; s.margin=margin; s.eps=eps; s.mn=min_noise
        s.maxp=maxp or 2*arms
    def noise(s):
        dev=[]
        for v in s.S:
            if len(v)<2: continue
            m=med(v); dev+= [abs(x-m) for x in v]
        return max(1.4826*med(dev) if dev else 0.0, s.mn)
    def best(s):
        b=-1
        for a,v in enumerate(s.S):
            if v and (b<0 or med(v)>med(s.S[b])): b=a
        return b
    def unconfirmed(s):
        b=s.best()
        if b<0 or s.conf<=1: return -1
        if len(s.S[b])<s.conf: return b
        th=med(s.S[b])-math.log1p(s.margin); pick=-1
        for a,v in enumerate(s.S):
            if v and len(v)<s.conf and med(v)>=th and (pick<0 or med(v)>med(s.S[pick])): pick=a
        return pick
    def radius(s,a,sig):
        return sig*math.sqrt(2*math.log(max(2,s.p))/len(s.S[a]))
    def nxt(s):
        if s.c>=0: return s.c
        few=min(range(len(s.S)), key=lambda a: len(s.S[a]))
        if len(s.S[few])<1: return few
        u=s.unconfirmed()
        if u>=0: return u
        sig=s.noise(); return max((a for a in range(len(s.S)) if s.S[a]), key=lambda a: med(s.S[a])+s.radius(a,sig))
    def record(s,a,t):
        s.S[a].append(-math.log(t)); s.p+=1; s.commit()
    def commit(s):
        if any(len(v)<1 for v in s.S) and s.p<s.maxp: return
        b=s.best()
        if s.p>=s.maxp: s.c=b; return
        if s.unconfirmed()>=0: return
        sig=s.noise(); low=med(s.S[b])-s.radius(b,sig); mg=math.log1p(s.eps)
        for a in range(len(s.S)):
            if a!=b and low+mg<med(s.S[a])+s.radius(a,sig): return
        s.c=b
def run(keys, confirm, seeds=100, first_slow=0.0):
    tot=0; ok=0; pulls=0; regret=0
    for samples in keys:
        names=list(samples); meds=[st.median(samples[n]) for n in names]; bm=min(meds)
        for sd in range(seeds):
            r=random.Random(sd); b=Bandit(len(names), confirm=confirm); cost=0
            while b.c<0:
                a=b.nxt(); t=r.choice(samples[names[a]])
                if first_slow and not b.S[a]: t*=1+first_slow
                b.record(a,t); cost+=meds[a]
            tot+=1; ok+= meds[b.c]<=1.03*bm; pulls+=b.p; regret+=cost/(b.p*bm)
    return ok/tot, pulls/tot, regret/tot
keys=[]
for f in sys.argv[1:]:
    d=json.load(open(f))
    for k in d.get('keys',[]):
        s=k.get('exhaustive',{}).get('samples',{})
        s={n:v for n,v in s.items() if len(v)>=3}
        if len(s)>=2: keys.append(s)
print(len(keys),'keys')
for fs in (0.0, 0.1):
    for c in (2,3):
        p,pl,rg=run(keys,c,seeds=40,first_slow=fs)
        print(f'first sample +{fs:.0%}: confirm {c}: P(within 3%) {p:.3f}, pulls to commit {pl:.1f}, mean arm time / best during exploration {rg:.3f}')

import json, re, subprocess, sys
G='/work/.mirror/yyyoungha+website/repo'
COMMIT='078c5bb01382ce561e5813062c107c356748b98d'
def show(path):
    return subprocess.run(['git','--git-dir='+G,'show',f'{COMMIT}:{path}'],capture_output=True,check=True).stdout.decode('utf-8')

def clean(md):
    title=''
    if md.startswith('---'):
        end=md.find('\n---',3)
        fm=md[3:end]; md=md[end+4:]
        m=re.search(r'^title:\s*(.+)$',fm,re.M)
        if m: title=m.group(1).strip().strip('"\'')
    md=re.sub(r'<!--.*?-->','',md,flags=re.S)
    # glossary tooltips -> text
    md=re.sub(r'\{\{<\s*glossary_tooltip[^>]*?text="([^"]*)"[^>]*>\}\}',r'\1',md)
    md=re.sub(r'\{\{<\s*glossary_tooltip[^>]*?term_id="([^"]*)"[^>]*>\}\}',lambda m:m.group(1).replace('-',' '),md)
    md=re.sub(r'\{\{<\s*skew\s+(\w+)\s*>\}\}',lambda m:{'latestVersion':'v1.23','currentVersion':'v1.23'}.get(m.group(1),''),md)
    md=re.sub(r'\{\{<[^>]*?>\}\}','',md,flags=re.S)
    md=re.sub(r'\{\{%[^%]*?%\}\}','',md,flags=re.S)
    md=re.sub(r'\{\{<.*?>\}\}','',md,flags=re.S)
    md=re.sub(r'<[a-zA-Z/][^>\n]*>','',md)  # stray html tags
    return title, md

def blocks_of(text):
    out=[]; cur=[]; infence=False
    for line in text.split('\n'):
        if line.strip().startswith('```'):
            infence=not infence; cur.append(line)
            if not infence:
                out.append('\n'.join(cur)); cur=[]
            continue
        if infence: cur.append(line); continue
        if not line.strip():
            if cur: out.append('\n'.join(cur)); cur=[]
        else: cur.append(line)
    if cur: out.append('\n'.join(cur))
    res=[]
    for b in out:
        b=b.rstrip()
        if not b.strip(): continue
        if len(b)<=1200: res.append(b); continue
        # split long block by lines / sentences
        piece=''
        for ln in re.split(r'(?<=\n)|(?<=[.다]\s)',b):
            if len(piece)+len(ln)>1200 and piece:
                res.append(piece.rstrip()); piece=''
            piece+=ln
        if piece.strip(): res.append(piece.rstrip())
    return res

def sections(md):
    secs=[]; h2=''; h3=''; buf=[]
    infence=False
    for line in md.split('\n'):
        if line.strip().startswith('```'): infence=not infence
        m=None if infence else re.match(r'^(#{2,3})\s+(.+?)\s*(\{#.*\})?\s*$',line)
        if m:
            secs.append((h2,h3,'\n'.join(buf))); buf=[]
            if len(m.group(1))==2: h2=m.group(2); h3=''
            else: h3=m.group(2)
        else: buf.append(line)
    secs.append((h2,h3,'\n'.join(buf)))
    return secs

def passages(path):
    title,md=clean(show(path))
    out=[]
    for h2,h3,body in sections(md):
        bl=blocks_of(body)
        # skip sections that are only "what's next" link lists
        if re.search(r"what's next|다음 내용|다음 목록|다음 항목", h2, re.I): continue
        cur=''
        chunks=[]
        for b in bl:
            if cur and len(cur)+2+len(b)>1200:
                chunks.append(cur); cur=b
            else:
                cur=(cur+'\n\n'+b) if cur else b
        if cur: chunks.append(cur)
        # merge short tail
        if len(chunks)>=2 and len(chunks[-1])<200 and len(chunks[-2])+2+len(chunks[-1])<=1200:
            chunks[-2]=chunks[-2]+'\n\n'+chunks[-1]; chunks.pop()
        t=title+(' — '+h2 if h2 else '')+(' > '+h3 if h3 else '')
        for c in chunks:
            c=c.strip()
            if 200<=len(c)<=1200:
                out.append(dict(text=c,title=t,path=path))
    return out

if __name__=='__main__':
    lang=sys.argv[1]; paths=sys.argv[2:]
    allp=[]
    for p in paths:
        full=f'content/{lang}/docs/{p}'
        ps=passages(full)
        print(len(ps),sum(len(x['text']) for x in ps),p,file=sys.stderr)
        allp+=ps
    print(len(allp),file=sys.stderr)
    with open(f'/tmp/k8s/{lang}_raw.jsonl','w') as f:
        for i,x in enumerate(allp):
            f.write(json.dumps(dict(doc_id=f'k8s-{lang}-{i:04d}',text=x['text'],source=f'https://github.com/kubernetes/website/blob/{COMMIT}/{x["path"]}',title=x['title']),ensure_ascii=False)+'\n')

"""The page's style sheet and script, inline (the page loads nothing from anywhere).

The first script in the page (ERROR_HOOK) records any script error in the document itself: the
`data-script-errors` attribute of <html> counts them and `#script-errors` lists them, so a test
that dumps the DOM after the scripts ran sees every failure. The main script makes tables
sortable (click a header; again to reverse; numbers sort by value from `data-v`), makes each
timeline zoomable (wheel, buttons, drag to pan) and opens every <details> before printing; it
sets `data-ready` on <html> when it has run."""

ERROR_HOOK = """
(function(){var n=0;function mark(m){n+=1;var h=document.documentElement;
h.setAttribute('data-script-errors',String(n));var box=document.getElementById('script-errors');
if(!box){box=document.createElement('pre');box.id='script-errors';
(document.body||h).appendChild(box);}box.textContent+=String(m)+'\\n';}
window.onerror=function(msg,src,line,col){mark(msg+' at '+line+':'+col);return false;};
window.addEventListener('unhandledrejection',function(e){mark('unhandled rejection: '+e.reason);});
})();
"""

JS = r"""
(function(){
'use strict';
function key(cell){
  if(!cell){return null;}
  var v=cell.getAttribute('data-v');
  if(v!==null&&v!==''){var x=parseFloat(v);if(!isNaN(x)){return x;}}
  var t=cell.textContent.trim();
  return (t===''||t==='-')?null:t;
}
function compare(a,b){
  if(a===null&&b===null){return 0;} if(a===null){return 1;} if(b===null){return -1;}
  if(typeof a==='number'&&typeof b==='number'){return a-b;}
  return String(a).localeCompare(String(b),undefined,{numeric:true});
}
function sortTable(table,col,th){
  var body=table.tBodies[0]; if(!body){return;}
  var dir=th.getAttribute('aria-sort')==='ascending'?'descending':'ascending';
  table.querySelectorAll('thead th').forEach(function(h){h.removeAttribute('aria-sort');});
  th.setAttribute('aria-sort',dir);
  var rows=Array.prototype.slice.call(body.rows).map(function(r,i){
    if(!r.hasAttribute('data-i')){r.setAttribute('data-i',String(i));}
    return r;});
  var sign=dir==='ascending'?1:-1;
  rows.sort(function(r1,r2){
    var a=key(r1.cells[col]),b=key(r2.cells[col]);
    if(a===null||b===null){var c=compare(a,b);if(c!==0){return c;}}
    else{var d=compare(a,b);if(d!==0){return sign*d;}}
    return parseInt(r1.getAttribute('data-i'),10)-parseInt(r2.getAttribute('data-i'),10);});
  rows.forEach(function(r){body.appendChild(r);});
}
function sortable(table){
  table.querySelectorAll('thead th').forEach(function(th,col){
    th.tabIndex=0; th.title='sort by this column';
    th.addEventListener('click',function(){sortTable(table,col,th);});
    th.addEventListener('keydown',function(e){
      if(e.key==='Enter'||e.key===' '){e.preventDefault();sortTable(table,col,th);}});
  });
}
function dur(t){
  if(t>=1||t===0){return t.toFixed(3)+' s';}
  if(t>=1e-3){return (t*1e3).toFixed(1)+' ms';}
  return (t*1e6).toFixed(0)+' us';
}
function ticks(lo,hi,want){
  var span=hi-lo; if(span<=0){return [lo];}
  var raw=span/want, mag=Math.pow(10,Math.floor(Math.log10(raw))), step=10*mag;
  [1,2,5,10].some(function(m){if(m*mag>=raw){step=m*mag;return true;}return false;});
  var out=[], t=Math.ceil(lo/step-1e-9)*step;
  for(;t<=hi+step*1e-9;t+=step){out.push(t);}
  return out;
}
var NS='http://www.w3.org/2000/svg';
function timeline(svg){
  var data=svg.querySelector('.tl-data'), axis=svg.querySelector('.tl-axis');
  var T=parseFloat(svg.getAttribute('data-t')), W=parseFloat(svg.getAttribute('data-plotw'));
  var L=parseFloat(svg.getAttribute('data-left')), A=parseFloat(svg.getAttribute('data-axis'));
  var k=1, x0=0, MAXK=Math.max(1, W*T/1e-6/50);
  MAXK=Math.min(MAXK,1e6);
  function clamp(){k=Math.min(Math.max(k,1),MAXK);x0=Math.min(Math.max(x0,0),W-W/k);}
  function draw(){
    clamp();
    data.setAttribute('transform','translate('+(L-x0*k)+' 0) scale('+k+' 1)');
    var lo=x0/W*T, hi=(x0+W/k)/W*T;
    while(axis.firstChild){axis.removeChild(axis.firstChild);}
    ticks(lo,hi,8).forEach(function(t){
      var x=L+(t-lo)/(hi-lo)*W;
      var ln=document.createElementNS(NS,'line');
      ln.setAttribute('x1',x);ln.setAttribute('x2',x);ln.setAttribute('y1',A-4);ln.setAttribute('y2',A);
      var tx=document.createElementNS(NS,'text');
      tx.setAttribute('x',x);tx.setAttribute('y',A-7);tx.textContent=dur(t);
      axis.appendChild(ln);axis.appendChild(tx);});
    svg.setAttribute('data-zoom',k.toFixed(3));
    svg.setAttribute('data-window',lo.toPrecision(6)+' '+hi.toPrecision(6));
  }
  function plotX(clientX){
    var r=svg.getBoundingClientRect(), vb=svg.viewBox.baseVal;
    return (clientX-r.left)*(vb.width/r.width)-L;
  }
  function zoomAt(px,f){var u=x0+px/k; k=k*f; clamp(); x0=u-px/k; draw();}
  svg.addEventListener('wheel',function(e){
    var px=plotX(e.clientX); if(px<0||px>W){return;}
    e.preventDefault(); zoomAt(px,e.deltaY<0?1.25:0.8);},{passive:false});
  var drag=null;
  svg.addEventListener('pointerdown',function(e){drag={x:e.clientX,x0:x0};
    if(svg.setPointerCapture){try{svg.setPointerCapture(e.pointerId);}catch(err){}}});
  svg.addEventListener('pointermove',function(e){if(!drag){return;}
    var r=svg.getBoundingClientRect(), vb=svg.viewBox.baseVal;
    x0=drag.x0-(e.clientX-drag.x)*(vb.width/r.width)/k; draw();});
  svg.addEventListener('pointerup',function(){drag=null;});
  svg.addEventListener('pointercancel',function(){drag=null;});
  var box=svg.closest('.timeline-box');
  if(box){box.querySelectorAll('button[data-zoom]').forEach(function(b){
    b.addEventListener('click',function(){var z=b.getAttribute('data-zoom');
      if(z==='reset'){k=1;x0=0;draw();}else{zoomAt(W/2,parseFloat(z));}});});}
  svg.timelineZoom=function(f,at){zoomAt(at===undefined?W/2:at*W,f);};
  svg.timelinePan=function(frac){x0+=frac*W/k;draw();};
  draw();
}
window.addEventListener('beforeprint',function(){
  document.querySelectorAll('details').forEach(function(d){d.open=true;});});
document.querySelectorAll('table.sortable').forEach(sortable);
document.querySelectorAll('svg.timeline').forEach(timeline);
document.documentElement.setAttribute('data-ready','1');
})();
"""

CSS = """
:root{--ink:#1d2733;--muted:#5b6b7b;--line:#d5dde5;--bg:#f6f8fa;--accent:#0b5cad;
--err:#b3261e;--errbg:#fdecea;--warn:#8a5a00;--warnbg:#fff4dc;--ok:#1e7a34;--okbg:#e7f5ea;
--chg:#0b5cad;--chgbg:#e8f0fb}
*{box-sizing:border-box}
html{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:#fff}
body{margin:0}
header.top{background:#10243e;color:#fff;padding:18px 32px 14px}
header.top h1{margin:0 0 4px;font-size:22px;font-weight:600}
header.top .sub{color:#b9c8da;font-size:13px}
header.top .status{display:inline-block;margin-left:10px;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;vertical-align:middle}
nav.toc{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid var(--line);padding:6px 32px;font-size:13px}
nav.toc a{color:var(--accent);text-decoration:none;margin-right:16px}
main{padding:8px 32px 40px;max-width:1500px}
section{margin-top:26px}
h2{font-size:18px;border-bottom:2px solid var(--ink);padding-bottom:4px;margin:0 0 12px}
h3{font-size:15px;margin:18px 0 8px}
p.note,.note{color:var(--muted);font-size:12.5px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--bg)}
.card .v{font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}
.card .k{color:var(--muted);font-size:12px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 14px;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:3px 10px 3px 6px;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th::after{content:" \\2195";color:#9aa8b6;font-size:11px}
table.sortable th[aria-sort=ascending]::after{content:" \\2191";color:var(--ink)}
table.sortable th[aria-sort=descending]::after{content:" \\2193";color:var(--ink)}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:11.5px;font-weight:600;white-space:nowrap}
.b-error,.s-breaks{background:var(--errbg);color:var(--err)}
.b-warning,.s-warns{background:var(--warnbg);color:var(--warn)}
.b-info{background:var(--chgbg);color:var(--chg)}
.s-holds,.b-ok{background:var(--okbg);color:var(--ok)}
.s-changes{background:var(--chgbg);color:var(--chg)}
.diag{border:1px solid var(--line);border-left:4px solid var(--muted);border-radius:4px;margin:8px 0;padding:6px 10px;background:#fff;break-inside:avoid}
.diag.error{border-left-color:var(--err)}.diag.warning{border-left-color:#d29a00}
.diag .msg{font-weight:600}
.diag .loc{color:var(--muted);font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
pre.src{background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:6px 0;margin:6px 0;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;overflow-x:auto}
pre.src span.ln{display:inline-block;width:4.5em;padding-right:10px;text-align:right;color:#8795a1;user-select:none}
pre.src .hl{background:#fff6c7}
pre.src mark{background:#ffd8d3;color:inherit;text-decoration:underline wavy var(--err)}
.diag ul{margin:4px 0;padding-left:20px}
.views{display:grid;grid-template-columns:1fr;gap:14px}
.views.pair{grid-template-columns:1fr 1fr}
figure.view{margin:0;border:1px solid var(--line);border-radius:6px;padding:8px;background:#fff;break-inside:avoid}
figure.view figcaption{font-weight:600;font-size:13px;margin-bottom:6px}
svg.view{width:100%;height:auto;display:block}
table.matrix td{min-width:150px}
table.matrix td ul{margin:3px 0 0;padding-left:16px}
.fig{font-size:12px;color:var(--ink)}
.delta-up{color:var(--err)}.delta-down{color:var(--ok)}
.timeline-box{border:1px solid var(--line);border-radius:6px;padding:6px;break-inside:avoid}
.timeline-box .controls{margin-bottom:4px}
.timeline-box button{font:inherit;font-size:12px;padding:1px 9px;margin-right:4px;border:1px solid var(--line);background:var(--bg);border-radius:4px;cursor:pointer}
svg.timeline{width:100%;height:auto;display:block;touch-action:none;cursor:grab}
svg.timeline text{font-size:9px;fill:var(--muted)}
svg.timeline text.lane{text-anchor:end}
svg.timeline .tl-axis text{text-anchor:middle}
svg.timeline .tl-axis line{stroke:#8795a1}
svg.timeline rect.stripe{fill:#f3f6f9}
svg.timeline .s-compute{fill:#3b7dd8}
svg.timeline .c-backward{fill:#1f4f96}svg.timeline .c-mixed{fill:#2d66b7}
svg.timeline .c-optimizer{fill:#7a7a7a}
svg.timeline .c-op-attention{fill:#5d9be6}svg.timeline .c-op-norm,svg.timeline .c-op-elementwise{fill:#8fb7ea}
svg.timeline .s-tp{fill:#e07b1a}svg.timeline .s-cp{fill:#c2185b}svg.timeline .s-ep{fill:#8e24aa}
svg.timeline .s-pp{fill:#2e8b57}svg.timeline .s-dp{fill:#6a4fb3}
.bar{display:flex;height:16px;border-radius:3px;overflow:hidden;margin:4px 0 8px;max-width:760px}
.bar span{display:block;height:100%}
.k-compute{background:#3b7dd8}.k-tp_comm{background:#e07b1a}.k-cp_comm{background:#c2185b}
.k-ep_comm{background:#8e24aa}.k-pp_comm{background:#2e8b57}.k-dp_comm{background:#6a4fb3}
.k-host{background:#b8860b}.k-bubble{background:#c9d2dc}.k-optimizer{background:#7a7a7a}
.t-forward{background:#3b7dd8}.t-backward{background:#1f4f96}.t-mixed{background:#2d66b7}.t-optimizer{background:#7a7a7a}
.t-tp{background:#e07b1a}.t-cp{background:#c2185b}.t-ep{background:#8e24aa}.t-pp{background:#2e8b57}
.t-dp{background:#6a4fb3}
div.tw{overflow-x:auto;max-width:100%}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:baseline}
.kv td:first-child{color:var(--muted)}
#script-errors{color:var(--err);background:var(--errbg);padding:8px}
footer{color:var(--muted);font-size:12px;padding:16px 32px;border-top:1px solid var(--line)}
@media (max-width:1100px){.views.pair{grid-template-columns:1fr}}
@media print{
  @page{size:A4 landscape;margin:12mm}
  html{font-size:10.5px}
  nav.toc,.timeline-box .controls,.noprint{display:none!important}
  header.top{background:#fff;color:#000;border-bottom:2px solid #000;padding:0 0 6px}
  header.top .sub{color:#333}
  main{padding:0;max-width:none}
  section{break-before:page;margin-top:0}
  section#summary{break-before:auto}
  h2,h3{break-after:avoid}
  table{break-inside:auto}tr{break-inside:avoid}thead{display:table-header-group}
  div.tw{overflow:visible}th,td{padding:2px 5px 2px 3px}
  table.sortable th::after{content:""}
  figure.view,.diag,.timeline-box,.card{break-inside:avoid}
  .views.pair{grid-template-columns:1fr 1fr}
  svg.view{max-height:170mm}
  a{color:inherit;text-decoration:none}
  *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
"""

// desync timeline: draws each process group's lanes from the #desync-data blob as inline SVG.
// No libraries and no network: the report must open offline. Groups are drawn when they
// scroll into view (eagerly while the total stays small), hit-testing is arithmetic on the
// grid rather than one listener per cell, so thousands of cells stay cheap.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('desync-data').textContent);
  var LH = 16, LABEL_ROW = 13, EAGER_CELLS = 60000;
  var zoom = 1, cws = {}, axis = 'seq';
  var tip = document.getElementById('tip'), panel = document.getElementById('detail');
  var host = document.getElementById('pgs'), drawn = {};

  function colour(i) { return 'hsl(' + ((i * 137.508 + 205) % 360).toFixed(1) + ',62%,' + (i % 2 ? 44 : 58) + '%)'; }
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; }); }
  function sizes(s) { return JSON.stringify(s); }
  function uniq(a) { return a.filter(function (x, i) { return a.indexOf(x) === i; }).join('/'); }
  function short(f) { return String(f).split('/').pop(); }

  function legend() {
    var h = D.ops.map(function (op, i) { return '<span><span class="sw" style="background:' + colour(i) + '"></span>' + esc(op) + '</span>'; });
    if (D.states) h.push('<span class="dim">faded: scheduled / started, not completed</span>');
    h.push('<span>zoom <button type="button" data-zoom="-1" aria-label="zoom out">−</button> <button type="button" data-zoom="1" aria-label="zoom in">+</button></span>');
    h.push('<span>axis <button type="button" id="axis" aria-label="switch the axis between sequence ids and time">seq ⇄ time</button> <span id="axis-note" class="dim"></span></span>');
    h.push('<span><label>find rank <input id="rank-search" type="search" inputmode="numeric" size="7" placeholder="e.g. 259"></label> <span id="rank-found" class="dim"></span></span>');
    var el = document.getElementById('legend');
    el.innerHTML = h.join('');
    document.getElementById('rank-search').addEventListener('input', function (e) { findRank(e.target.value.trim()); });
    document.getElementById('axis').addEventListener('click', function () {
      axis = axis === 'seq' ? 'time' : 'seq';
      document.body.setAttribute('data-axis', axis);
      document.getElementById('axis-note').textContent = axis === 'seq' ? '' :
        'x: time since the first enqueue' + (D.states ? '' : '; Gloo records no start or end, so each collective is a thin outlined tick at its enqueue time: its length is unknown');
      Object.keys(drawn).forEach(function (k) { draw(+k); });
    });
    el.addEventListener('click', function (e) {
      var z = e.target.getAttribute && e.target.getAttribute('data-zoom');
      if (!z) return;
      zoom = Math.max(0.25, Math.min(4, zoom * (z > 0 ? 1.5 : 1 / 1.5)));
      Object.keys(drawn).forEach(function (k) { draw(+k); });
    });
  }

  // The furthest seq a lane reached (-1: nothing, or no dump): lanes are ordered by it, the
  // ranks that fell behind first, so the ones holding everyone up sit at the top.
  function progress(pg, l) {
    var last = -1;
    for (var i = 0; i < l.cells.length; i += 2) last = Math.max(last, pg.cols[l.cells[i]]);
    return last;
  }

  function skeleton() {
    var budget = EAGER_CELLS;
    D.pgs.forEach(function (pg) {
      pg.lanes.forEach(function (l, i) { l.progress = progress(pg, l); l.order = i; });
      pg.lanes.sort(function (a, b) { return a.progress - b.progress || a.order - b.order; });
    });
    D.pgs.forEach(function (pg, k) {
      var real = pg.cols.filter(function (c) { return c >= 0; }).length;
      var total = pg.cols.reduce(function (n, c) { return n + (c >= 0 ? 1 : -c); }, 0);
      var d = document.createElement('details');
      d.className = 'pg'; d.id = 'pg-' + k; d.open = pg.open; d.setAttribute('data-name', pg.name);
      d.innerHTML = '<summary>' + esc(pg.label) + '<span class="dim">ranks ' + esc(pg.members) + ' · ' + pg.lanes.length +
        (pg.lanes.length === 1 ? ' lane · ' : ' lanes · ') + real + ' of ' + total + ' seqs drawn' + (pg.window_start > 1 ? ' (compared from seq ' + pg.window_start + ')' : '') +
        '</span></summary><div class="tl"><div class="labels"></div><div class="scroll"></div></div>' +
        (pg.lanes_elided ? '<div class="elided">' + esc(pg.lanes_elided) + '</div>' : '');
      host.appendChild(d);
      var cells = pg.lanes.reduce(function (n, l) { return n + l.cells.length / 2; }, 0);
      if (pg.open && cells <= budget) { budget -= cells; draw(k); }
      d.addEventListener('toggle', function () { if (d.open && !drawn[k]) draw(k); });
    });
    if (D.pgs_elided.length) {
      var p = document.createElement('p');
      p.className = 'dim';
      p.textContent = D.pgs_elided_count + ' more process group(s) agree or matter less and are not drawn: ' + D.pgs_elided.slice(0, 40).join(', ') + (D.pgs_elided_count > D.pgs_elided.length ? ', …' : '');
      host.appendChild(p);
    }
    if (!('IntersectionObserver' in window)) { D.pgs.forEach(function (pg, k) { if (pg.open && !drawn[k]) draw(k); }); return; }
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (en) {
        var k = +en.target.id.slice(3);
        if (en.isIntersecting && en.target.open && !drawn[k]) draw(k);
      });
    }, { rootMargin: '600px' });
    D.pgs.forEach(function (_, k) { io.observe(document.getElementById('pg-' + k)); });
  }

  // One label width for every group, so their seq axes line up under each other.
  var lwCache = 0;
  function labelWidth() {
    lwCache = lwCache || Math.min(360, 20 + 7 * D.pgs.reduce(function (m, pg) {
      return pg.lanes.reduce(function (m2, l) { return Math.max(m2, l.label.length + (l.culprit ? 2 : 0) + (l.stuck ? 6 : 0)); }, m);
    }, 6));
    return lwCache;
  }

  // Per lane, column -> detail index (-1: nothing issued there).
  function grid(pg) {
    return pg.lanes.map(function (l) {
      var g = new Int32Array(pg.cols.length).fill(-1);
      for (var i = 0; i < l.cells.length; i += 2) g[l.cells[i]] = l.cells[i + 1];
      return g;
    });
  }

  // Text widths from the font the labels use, so label boxes are laid out, not guessed.
  var ctx = document.createElement('canvas').getContext('2d');
  function textWidth(t) { ctx.font = 'bold 11px system-ui, sans-serif'; return ctx.measureText(t).width; }

  // Each mark's label starts at its column and takes the first row where it overlaps no label
  // already placed (earliest and stuck first); past three rows, other mismatches keep only a
  // marker. Returns the rows used and how far right the labels reach.
  function layoutLabels(pg, xOf) {
    var rows = [], placed = [], right = 0, MAX_ROWS = 3;
    var order = pg.marks.map(function (m, i) { return i; }).sort(function (a, b) {
      return (pg.marks[a].kind === 'mismatch') - (pg.marks[b].kind === 'mismatch') || a - b;
    });
    order.forEach(function (i) {
      var m = pg.marks[i], text = '▾ ' + m.label, x0 = xOf(m);
      if (x0 === null) return;
      var x1 = x0 + textWidth(text) + 6, row = 0;
      function free(r) { return (rows[r] || []).every(function (b) { return x1 <= b[0] || x0 >= b[1]; }); }
      while (!free(row)) row++;
      if (row >= MAX_ROWS) {
        if (m.kind === 'mismatch') { text = '▾'; x1 = x0 + textWidth(text) + 2; row = 0; while (!free(row)) row++; }
      }
      (rows[row] = rows[row] || []).push([x0, x1]);
      placed.push({ kind: m.kind, text: text, x0: x0, x1: x1, row: row });
      right = Math.max(right, x1);
    });
    return { rows: Math.max(1, rows.length), placed: placed, right: right };
  }

  function inRanks(text, r) {
    return String(text).split(',').some(function (part) {
      var b = part.split('-'), lo = +b[0], hi = b.length > 1 ? +b[1] : lo;
      return r >= lo && r <= hi;
    });
  }

  // Highlights the lanes holding a rank in every group (opening and drawing them), and scrolls
  // to the first; says where the rank is when it sits in a class lane or was not drawn.
  function findRank(q) {
    var out = document.getElementById('rank-found');
    document.querySelectorAll('text.lane-label.found').forEach(function (t) { t.classList.remove('found'); });
    if (!/^[0-9]+$/.test(q)) { out.textContent = ''; return; }
    var r = +q, first = null, where = [];
    D.pgs.forEach(function (pg, k) {
      pg.lanes.forEach(function (l) {
        if (!inRanks(l.ranks, r)) return;
        var el = document.getElementById('pg-' + k);
        if (!el.open) el.open = true;
        if (!drawn[k]) draw(k);
        el.querySelectorAll('text.lane-label').forEach(function (t) {
          if (t.getAttribute('data-ranks') === l.ranks) { t.classList.add('found'); first = first || t; }
        });
        where.push(pg.label);
      });
    });
    out.textContent = where.length ? 'rank ' + r + ': ' + where.length + ' lane(s)' : 'rank ' + r + ' is in no drawn lane';
    if (first) first.scrollIntoView({ block: 'center' });
  }

  function draw(k) { if (axis === 'time') drawTime(k); else drawSeq(k); drawn[k] = true; }

  // Ticks every 1, 2 or 5 x 10^n ms, about every 120 px.
  function tickStep(spanMs, px) {
    var raw = spanMs * 120 / Math.max(px, 1), p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    return [1, 2, 5, 10].map(function (m) { return m * p; }).find(function (x) { return x >= raw; });
  }
  function msText(ms) { return ms >= 1000 ? (ms / 1000).toFixed(ms % 1000 ? 1 : 0) + ' s' : (+ms.toFixed(3)) + ' ms'; }

  // The time axis: each collective at its enqueue time, as long as the dump says it ran (from
  // enqueue to completion, or to start when it never completed); without either (Gloo) a thin
  // outlined tick, never a made-up length. Columns and gaps mean nothing here.
  function drawTime(k) {
    var pg = D.pgs[k], el = document.getElementById('pg-' + k), lw = labelWidth();
    var t0 = Infinity, t1 = -Infinity;
    pg.lanes.forEach(function (l) {
      for (var q = 0; q < l.times.length; q += 2) {
        if (l.times[q] < 0) continue;
        t0 = Math.min(t0, l.times[q]); t1 = Math.max(t1, l.times[q] + Math.max(0, l.times[q + 1]));
      }
    });
    if (t0 === Infinity) { t0 = 0; t1 = 1; }
    var pxw = Math.max(200, el.clientWidth - lw - 24) * zoom, span = Math.max(t1 - t0, 1e-3), sc = pxw / span;
    var X = function (t) { return 4 + (t - t0) * sc; };
    // A mark sits where its column's collectives were first enqueued.
    var markX = function (m) {
      var best = Infinity;
      pg.lanes.forEach(function (l) {
        for (var q = 0; q < l.cells.length; q += 2) {
          if (l.cells[q] >= m.col && l.cells[q] < m.col + m.span && l.times[q] >= 0) best = Math.min(best, l.times[q]);
        }
      });
      return best === Infinity ? null : X(best);
    };
    var labels = layoutLabels(pg, markX);
    var HEAD = pg.head = 22 + labels.rows * LABEL_ROW;
    var n = pg.lanes.length, w = Math.max(pxw + 24, labels.right + 8), h = HEAD + n * LH + 2;
    var lab = ['<svg class="lanes" width="' + lw + '" height="' + h + '">'];
    var s = ['<svg class="cells time" width="' + w + '" height="' + h + '" data-pg="' + k + '">'];
    pg.tx = [];
    pg.lanes.forEach(function (l, i) {
      var y = HEAD + i * LH, cls = l.culprit ? 'culprit' : (i % 2 ? 'zebra' : '');
      if (cls) s.push('<rect class="laneband ' + cls + '" x="0" y="' + y + '" width="' + w + '" height="' + LH + '"/>');
      lab.push(laneLabel(l, y));
    });
    pg.marks.forEach(function (m) {
      var x = markX(m);
      if (x !== null) s.push('<rect class="band ' + m.kind + '" x="' + (x - 1) + '" y="0" width="3" height="' + h + '"/>');
    });
    var step = tickStep(span, pxw);
    for (var t = 0; t <= span + 1e-9; t += step) s.push('<text class="tick" x="' + X(t0 + t) + '" y="' + (HEAD - 8) + '">' + msText(t) + '</text>');
    pg.lanes.forEach(function (l, i) {
      var y = HEAD + i * LH + 2, xs = [];
      for (var q = 0; q < l.cells.length; q += 2) {
        var at = l.times[q], dur = l.times[q + 1], d = D.details[l.cells[q + 1]];
        if (at < 0) { xs.push(null); continue; }
        var x = X(at), wd = dur >= 0 ? Math.max(2, dur * sc) : 3;
        xs.push([x, x + Math.max(wd, 3)]);
        var cls = 'cell' + (dur < 0 ? ' dur-unknown' : '') + (D.states && d.state !== 'completed' ? ' s-' + d.state : '');
        s.push('<rect class="' + cls + '" x="' + x + '" y="' + y + '" width="' + wd + '" height="' + (LH - 4) + '" ' + (dur < 0 ? 'stroke' : 'fill') + '="' + colour(d.op) + '"/>');
      }
      pg.tx.push(xs);
    });
    labels.placed.forEach(function (p) {
      s.push('<text class="mlabel ' + p.kind + '" x="' + p.x0 + '" y="' + (11 + p.row * LABEL_ROW) + '">' + esc(p.text) + '</text>');
    });
    lab.push('</svg>'); s.push('</svg>');
    el.querySelector('.labels').innerHTML = lab.join('');
    el.querySelector('.scroll').innerHTML = s.join('');
  }

  function laneLabel(l, y) {
    return '<text class="lane-label' + (l.culprit ? ' culprit' : '') + (l.missing ? ' missing' : '') + '" data-ranks="' + esc(l.ranks) + '" data-progress="' + l.progress +
      '" x="6" y="' + (y + LH - 4) + '">' + esc(l.label) + (l.culprit ? ' ◀' : '') + (l.stuck ? ' <tspan class="st">stuck</tspan>' : '') + '</text>';
  }

  function drawSeq(k) {
    var pg = D.pgs[k], el = document.getElementById('pg-' + k);
    pg.grid = pg.grid || grid(pg);
    var lw = labelWidth();
    // Fit the columns to the width available (a short job gets wide cells), then apply the zoom.
    var avail = Math.max(200, el.clientWidth - lw - 24);
    var cw = cws[k] = Math.max(2, Math.round(Math.max(4, Math.min(24, Math.floor(avail / pg.cols.length))) * zoom));
    // At least wide enough for a mark's label on a short job.
    var labels = layoutLabels(pg, function (m) { return m.col * cw; });
    var HEAD = pg.head = 22 + labels.rows * LABEL_ROW;
    var n = pg.lanes.length, w = Math.max(pg.cols.length * cw + 24, labels.right + 8), h = HEAD + n * LH + 2;
    var lab = ['<svg class="lanes" width="' + lw + '" height="' + h + '">'];
    var s = ['<svg class="cells" width="' + w + '" height="' + h + '" data-pg="' + k + '"><defs><pattern id="hatch-' + k + '" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#ccd"/></pattern></defs>'];
    pg.lanes.forEach(function (l, i) {
      var y = HEAD + i * LH, cls = l.culprit ? 'culprit' : (i % 2 ? 'zebra' : '');
      if (cls) s.push('<rect class="laneband ' + cls + '" x="0" y="' + y + '" width="' + pg.cols.length * cw + '" height="' + LH + '"/>');
      lab.push(laneLabel(l, y));
    });
    var hot = {};
    pg.marks.forEach(function (m) {
      s.push('<rect class="band ' + m.kind + '" x="' + m.col * cw + '" y="0" width="' + cw * m.span + '" height="' + h + '"/>');
      if (m.kind === 'earliest') hot[m.col] = 1;
    });
    var lastTick = -1e9;
    pg.cols.forEach(function (c, j) {
      var x = j * cw;
      if (c < 0) s.push('<rect class="gap" fill="url(#hatch-' + k + ')" x="' + x + '" y="' + (HEAD - 6) + '" width="' + cw + '" height="' + (h - HEAD + 6) + '"/>');
      else if ((c % 10 === 0 || j === 0) && x - lastTick > 44) { s.push('<text class="tick" x="' + x + '" y="' + (HEAD - 8) + '">' + c + '</text>'); lastTick = x; }
    });
    pg.lanes.forEach(function (l, i) {
      var y = HEAD + i * LH + 2;
      for (var q = 0; q < l.cells.length; q += 2) {
        var col = l.cells[q], d = D.details[l.cells[q + 1]];
        var cls = 'cell' + (D.states && d.state !== 'completed' ? ' s-' + d.state : '') + (l.culprit && hot[col] ? ' hot' : '');
        s.push('<rect class="' + cls + '" x="' + (col * cw + 1) + '" y="' + y + '" width="' + Math.max(1, cw - 2) + '" height="' + (LH - 4) + '" fill="' + colour(d.op) + '"/>');
      }
      // Where something happened, a lane that issued nothing is evidence too: outline the hole.
      if (!l.missing) pg.marks.forEach(function (m) {
        for (var c = m.col; c < m.col + m.span; c++) {
          if (pg.grid[i][c] < 0) s.push('<rect class="absent" x="' + (c * cw + 1.5) + '" y="' + (y + 0.5) + '" width="' + Math.max(1, cw - 3) + '" height="' + (LH - 5) + '"/>');
        }
      });
    });
    // Labels last so they sit above the bands, each on the row layoutLabels gave it.
    labels.placed.forEach(function (p) {
      s.push('<text class="mlabel ' + p.kind + '" x="' + p.x0 + '" y="' + (11 + p.row * LABEL_ROW) + '">' + esc(p.text) + '</text>');
    });
    lab.push('</svg>'); s.push('</svg>');
    el.querySelector('.labels').innerHTML = lab.join('');
    var sc = el.querySelector('.scroll');
    sc.innerHTML = s.join('');
    var focus = pg.marks.length ? pg.marks[0].col * cw : w;
    sc.scrollLeft = Math.max(0, focus - sc.clientWidth / 2);
    drawn[k] = true;
  }

  // Which (pg, lane, column) is under the pointer, and what is there.
  function hit(e) {
    var svg = e.target.closest && e.target.closest('svg.cells');
    if (!svg) return null;
    var k = +svg.getAttribute('data-pg'), pg = D.pgs[k], r = svg.getBoundingClientRect(), cw = cws[k];
    if (axis === 'time') return hitTime(e, k, pg, r);
    var col = Math.floor((e.clientX - r.left) / cw), lane = Math.floor((e.clientY - r.top - pg.head) / LH);
    if (col < 0 || col >= pg.cols.length) return null;
    var marks = pg.marks.filter(function (m) { return col >= m.col && col < m.col + m.span; });
    if (pg.cols[col] < 0) return { text: (-pg.cols[col]) + ' seq(s) elided here' };
    if (lane < 0 || lane >= pg.lanes.length) return marks.length ? { text: marks.map(function (m) { return m.label; }).join('\n') } : null;
    var di = pg.grid[lane][col], l = pg.lanes[lane];
    var head = pg.label + ' · seq ' + pg.cols[col] + '\n' + l.label + (l.culprit ? '  (departed)' : '');
    if (di < 0) return { text: head + '\nnothing issued' + (marks.length ? '\n' + marks[0].label : '') };
    return { text: head + '\n' + describe(D.details[di]) + (marks.length ? '\n' + marks[0].label : ''), k: k, lane: lane, col: col, d: D.details[di] };
  }

  function hitTime(e, k, pg, r) {
    var x = e.clientX - r.left, lane = Math.floor((e.clientY - r.top - pg.head) / LH);
    if (lane < 0 || lane >= pg.lanes.length || !pg.tx) return null;
    var xs = pg.tx[lane], l = pg.lanes[lane];
    for (var i = 0; i < xs.length; i++) {
      if (!xs[i] || x < xs[i][0] - 1 || x > xs[i][1] + 1) continue;
      var col = l.cells[2 * i], d = D.details[l.cells[2 * i + 1]], dur = l.times[2 * i + 1];
      var when = 'enqueued at ' + msText(l.times[2 * i]) + (dur >= 0 ? ', ran ' + msText(dur) : ', duration not recorded');
      var text = pg.label + ' · seq ' + pg.cols[col] + '\n' + l.label + '\n' + when + '\n' + describe(d);
      return { text: text, k: k, lane: lane, col: col, d: d };
    }
    return null;
  }

  function describe(d) {
    var t = d.name + (d.n > 1 ? ' (+' + (d.n - 1) + ' coalesced)' : '') + ' · ' + d.state +
      '\nin  ' + sizes(d.input) + ' ' + uniq(d.dtypes) + '\nout ' + sizes(d.output) + ' ' + uniq(d.out_dtypes);
    var user = d.frames.filter(function (f) { return !f[3]; }).slice(0, 3);
    return t + user.map(function (f) { return '\nat ' + short(f[1]) + ':' + f[2] + ' ' + f[0]; }).join('');
  }

  function pin(h) {
    var frames = h.d.frames.length ? '<ol>' + h.d.frames.map(function (f) {
      return '<li' + (f[3] ? ' class="lib"' : '') + '>' + esc(f[1]) + ':' + f[2] + ' ' + esc(f[0]) + '</li>';
    }).join('') + '</ol>' : '<p class="dim">no stack frames in this dump</p>';
    panel.innerHTML = '<button type="button" aria-label="close">✕</button><pre>' + esc(h.text) + '</pre>' + frames;
    panel.hidden = false;
  }

  document.addEventListener('mousemove', function (e) {
    var h = hit(e);
    if (!h) { tip.hidden = true; return; }
    tip.textContent = h.text; tip.hidden = false;
    var x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    var y = e.clientY + 16 + tip.offsetHeight > window.innerHeight ? e.clientY - tip.offsetHeight - 10 : e.clientY + 16;
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  });
  document.addEventListener('click', function (e) {
    if (e.target.closest && e.target.closest('#detail button')) { panel.hidden = true; return; }
    var h = hit(e);
    if (h && h.d) pin(h);
  });

  legend();
  skeleton();
}());

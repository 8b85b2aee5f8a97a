// desync timeline: draws each process group's lanes from the #desync-data blob as inline SVG.
// No libraries and no network: the report must open offline. Groups are drawn when they
// scroll into view (eagerly while the total stays small), hit-testing is arithmetic on the
// grid rather than one listener per cell, so thousands of cells stay cheap.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('desync-data').textContent);
  var LH = 16, HEAD = 34, EAGER_CELLS = 60000;
  var zoom = 1, cws = {};
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
    var el = document.getElementById('legend');
    el.innerHTML = h.join('');
    el.addEventListener('click', function (e) {
      var z = e.target.getAttribute && e.target.getAttribute('data-zoom');
      if (!z) return;
      zoom = Math.max(0.25, Math.min(4, zoom * (z > 0 ? 1.5 : 1 / 1.5)));
      Object.keys(drawn).forEach(function (k) { draw(+k); });
    });
  }

  function skeleton() {
    var budget = EAGER_CELLS;
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
      p.textContent = D.pgs_elided.length + ' more process group(s) agree or matter less and are not drawn: ' + D.pgs_elided.slice(0, 40).join(', ') + (D.pgs_elided.length > 40 ? ', …' : '');
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

  function draw(k) {
    var pg = D.pgs[k], el = document.getElementById('pg-' + k);
    pg.grid = pg.grid || grid(pg);
    var lw = labelWidth();
    // Fit the columns to the width available (a short job gets wide cells), then apply the zoom.
    var avail = Math.max(200, el.clientWidth - lw - 24);
    var cw = cws[k] = Math.max(2, Math.round(Math.max(4, Math.min(24, Math.floor(avail / pg.cols.length))) * zoom));
    // At least wide enough for a mark's label on a short job.
    var n = pg.lanes.length, w = Math.max(pg.cols.length * cw + 24, pg.marks.length ? 280 : 0), h = HEAD + n * LH + 2;
    var lab = ['<svg class="lanes" width="' + lw + '" height="' + h + '">'];
    var s = ['<svg class="cells" width="' + w + '" height="' + h + '" data-pg="' + k + '"><defs><pattern id="hatch-' + k + '" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#ccd"/></pattern></defs>'];
    pg.lanes.forEach(function (l, i) {
      var y = HEAD + i * LH, cls = l.culprit ? 'culprit' : (i % 2 ? 'zebra' : '');
      if (cls) s.push('<rect class="laneband ' + cls + '" x="0" y="' + y + '" width="' + pg.cols.length * cw + '" height="' + LH + '"/>');
      lab.push('<text class="lane-label' + (l.culprit ? ' culprit' : '') + (l.missing ? ' missing' : '') + '" data-ranks="' + esc(l.ranks) +
        '" x="6" y="' + (y + LH - 4) + '">' + esc(l.label) + (l.culprit ? ' ◀' : '') + (l.stuck ? ' <tspan class="st">stuck</tspan>' : '') + '</text>');
    });
    var hot = {};
    pg.marks.forEach(function (m) {
      s.push('<rect class="band ' + m.kind + '" x="' + m.col * cw + '" y="0" width="' + cw + '" height="' + h + '"/>');
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
        if (pg.grid[i][m.col] < 0) s.push('<rect class="absent" x="' + (m.col * cw + 1.5) + '" y="' + (y + 0.5) + '" width="' + Math.max(1, cw - 3) + '" height="' + (LH - 5) + '"/>');
      });
    });
    // Labels last so they sit above the bands; earliest/stuck get words, others a marker.
    // Other mismatches get their label too while they are few enough not to collide.
    var few = pg.marks.length <= 4;
    pg.marks.forEach(function (m) {
      var x = m.col * cw + cw / 2, txt = m.kind === 'mismatch' && !few ? '▾' : '▾ ' + m.label;
      var anchor = m.kind === 'mismatch' || x < 120 ? 'start' : (x > w - 120 ? 'end' : 'middle');
      s.push('<text class="mlabel ' + m.kind + '" x="' + (anchor === 'start' ? m.col * cw : x) + '" y="11" text-anchor="' + anchor + '">' + esc(txt) + '</text>');
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
    var col = Math.floor((e.clientX - r.left) / cw), lane = Math.floor((e.clientY - r.top - HEAD) / LH);
    if (col < 0 || col >= pg.cols.length) return null;
    var marks = pg.marks.filter(function (m) { return m.col === col; });
    if (pg.cols[col] < 0) return { text: (-pg.cols[col]) + ' seq(s) elided here' };
    if (lane < 0 || lane >= pg.lanes.length) return marks.length ? { text: marks.map(function (m) { return m.label; }).join('\n') } : null;
    var di = pg.grid[lane][col], l = pg.lanes[lane];
    var head = pg.label + ' · seq ' + pg.cols[col] + '\n' + l.label + (l.culprit ? '  (departed)' : '');
    if (di < 0) return { text: head + '\nnothing issued' + (marks.length ? '\n' + marks[0].label : '') };
    return { text: head + '\n' + describe(D.details[di]) + (marks.length ? '\n' + marks[0].label : ''), k: k, lane: lane, col: col, d: D.details[di] };
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

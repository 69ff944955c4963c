extension HTMLReportScript {
    /// The timeline of one run as SVG: a time axis, the scenario's steps, the relay row
    /// (connection-less events), requests no connection is known for, then one swimlane per
    /// relay connection — its life, byte density up (above the middle) and down (below), bytes
    /// faults swallowed, and every marker: faults, FIN and RST placed by side (client above,
    /// upstream below), HTTP requests and responses, and the client's requests as bars on the
    /// connection that carried them. Drag to zoom into a span, Alt+wheel to zoom at the cursor,
    /// double-click or the buttons to zoom out; hovering shows exact times. Only what is in view
    /// is drawn, and the SVG is written as one string, so a thousand lanes redraw at once.
    static let timeline = #"""
    var NetsimTimeline = (function () {
      'use strict';
      var LABEL = 160, RIGHT = 8, LANE = 28, AXIS = 22, STEPS = 34, ROW = 20;
      var el = NetsimReport.el, seconds = NetsimReport.seconds, short = NetsimReport.short, tip = NetsimReport.tip;
      var SIDE = { client: -6, upstream: 6, relay: 0 };
      function esc(s) { return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;'); }
      function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }
      function niceStep(span, count) {
        var raw = span / count, power = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / power;
        return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * power;
      }
      function tickLabel(t, step) { return step >= 1e6 ? (t / 1e6).toFixed(0) + ' s' : step >= 1e3 ? (t / 1e6).toFixed(step >= 1e5 ? 1 : step >= 1e4 ? 2 : 3) + ' s' : (t / 1e3).toFixed(3) + ' ms'; }
      function legend() {
        function sample(svg, text) { return el('span', null, [svgSample(svg), ' ' + text]); }
        function svgSample(inner) { var s = document.createElement('span'); s.innerHTML = '<svg width="16" height="14" viewBox="-8 -7 16 14">' + inner + '</svg>'; return s; }
        return el('div', { class: 'legend' }, [
          sample('<rect class="d-up" x="-6" y="-6" width="12" height="6"/><rect class="d-down" x="-6" y="0" width="12" height="6"/>', 'bytes up / down'),
          sample('<path class="m-fault" d="M0 -7l5 7l-5 7l-5 -7z"/>', 'fault'),
          sample('<path class="m-fin s-client" d="M-3 -4l6 4l-6 4z"/>', 'FIN (client above, upstream below)'),
          sample('<path class="m-rst s-upstream" d="M-4 -4l8 8m0 -8l-8 8"/>', 'RST'),
          sample('<path class="m-open" d="M2 -7h-3v14h3"/>', 'opened'),
          sample('<path class="m-end s-client" d="M0 -7v14"/>', 'closed'),
          sample('<path class="m-req" d="M0 -7v7"/><path class="m-resp" d="M0 1v6"/>', 'HTTP request / response'),
          sample('<rect class="r-ok" x="-7" y="-2" width="14" height="4"/>', 'client request'),
          sample('<circle class="m-upstream" r="3"/>', 'upstream connected')
        ]);
      }

      function create(run) {
        // The whole run, and a little room after its last event so that no marker sits on the edge.
        var full = run.end + Math.max(1, Math.round(run.end / 50));
        var view = { t0: 0, t1: full }, width = 0, height = 0, highlighted = null, focusAt = null;
        var box = el('div', { class: 'timeline' });
        var range = el('span', { class: 'range' });
        var controls = el('div', { class: 'controls' }, [
          el('button', { text: '+', title: 'zoom in', onclick: function () { zoom(0.5, (view.t0 + view.t1) / 2); } }),
          el('button', { text: '−', title: 'zoom out', onclick: function () { zoom(2, (view.t0 + view.t1) / 2); } }),
          el('button', { text: 'whole run', onclick: function () { setView(0, full); } }),
          range, el('span', { class: 'range', text: '· drag to zoom into a span, Alt+wheel zooms, double-click zooms out' })
        ]);
        var node = el('div', { class: 'timeline-block', id: run.id + '-timeline' }, [el('h3', { text: 'Timeline' }), controls, legend(), box]);
        var byConn = {}, unplaced = [];
        run.requests.forEach(function (r) { if (r.conn != null) (byConn[r.conn] = byConn[r.conn] || []).push(r); else unplaced.push(r); });
        var maxBin = 1;
        run.lanes.forEach(function (lane) { for (var i = 0; i < lane.d.length; i += 3) maxBin = Math.max(maxBin, lane.d[i + 1], lane.d[i + 2]); });
        var rowsTop = AXIS + STEPS + ROW + (unplaced.length ? ROW : 0);

        function plot() { return width - LABEL - RIGHT; }
        function x(t) { return LABEL + (t - view.t0) / (view.t1 - view.t0) * plot(); }
        function timeAt(px) { return view.t0 + (px - LABEL) / plot() * (view.t1 - view.t0); }
        function inView(t) { return t >= view.t0 && t <= view.t1; }
        function h(v) { return v <= 0 ? 0 : 1 + 9 * Math.log(1 + v) / Math.log(1 + maxBin); }
        function f(n) { return n.toFixed(1); }
        function tipAttr(text) { return ' data-tip="' + esc(text) + '"'; }

        function mark(m, cy) {
          var mx = f(x(m.t)), y = cy + (m.s && SIDE[m.s] != null ? SIDE[m.s] : 0);
          var attrs = ' class="mark m-' + m.k + (m.s ? ' s-' + m.s : '') + '"' + tipAttr(seconds(m.t) + '  ' + m.text);
          switch (m.k) {
            case 'open': return '<path' + attrs + ' d="M' + (x(m.t) + 3).toFixed(1) + ' ' + (cy - 8) + 'h-3v16h3"/>';
            case 'fault': return '<path' + attrs + ' d="M' + mx + ' ' + (cy - 7) + 'l5 7l-5 7l-5 -7z"/>';
            case 'lifted': case 'added': return '<path' + attrs + ' d="M' + mx + ' ' + (cy - 5) + 'l4 5l-4 5l-4 -5z"/>';
            case 'fin': return '<path' + attrs + ' d="M' + mx + ' ' + (y - 4) + 'l6 4l-6 4z"/>';
            case 'rst': return '<path' + attrs + ' d="M' + (x(m.t) - 4).toFixed(1) + ' ' + (y - 4) + 'l8 8m0 -8l-8 8"/>';
            case 'end': return '<path' + attrs + ' d="M' + mx + ' ' + (cy - 10) + 'v20"/>';
            case 'req': return '<path' + attrs + ' d="M' + mx + ' ' + (cy - 12) + 'v7"/>';
            case 'resp': return '<path' + attrs + ' d="M' + mx + ' ' + (cy + 5) + 'v7"/>';
            default: return '<circle' + attrs + ' cx="' + mx + '" cy="' + cy + '" r="3"/>';
          }
        }
        function requestBar(r, y) {
          var a = Math.max(LABEL, x(r.start)), b = Math.min(width - RIGHT, x(r.end));
          if (b < LABEL || a > width - RIGHT) return '';
          return '<rect class="req-bar ' + (r.error ? 'r-err' : 'r-ok') + '" x="' + f(a) + '" y="' + y + '" width="' + f(Math.max(2, b - a)) + '" height="4"' +
            tipAttr(r.label + '  ' + r.method + ' ' + r.path + '\n' + r.summary + '\n' + seconds(r.start) + ' → ' + seconds(r.end) + (r.message ? '\n' + r.message : '')) + '/>';
        }
        // A bin is drawn within the connection's life: a coarse bin (a run of many lanes has
        // 48 each) holding the last bytes reached past the FIN and the close marker (QA 62).
        function density(lane, mid) {
          var up = '', down = '', dropped = '', bin = run.bin;
          var from = lane.opened, to = lane.closed == null ? run.end : lane.closed;
          function span(t) { var s = Math.max(t, from), e = Math.max(s, Math.min(t + bin, to)); return [s, e]; }
          for (var i = 0; i < lane.d.length; i += 3) {
            var se = span(lane.d[i] * bin);
            if (se[1] < view.t0 || se[0] > view.t1) continue;
            var a = x(se[0]), w = Math.max(1, x(se[1]) - a);
            if (lane.d[i + 1]) up += 'M' + f(a) + ' ' + mid + 'h' + f(w) + 'v' + f(-h(lane.d[i + 1])) + 'h' + f(-w) + 'z';
            if (lane.d[i + 2]) down += 'M' + f(a) + ' ' + mid + 'h' + f(w) + 'v' + f(h(lane.d[i + 2])) + 'h' + f(-w) + 'z';
          }
          for (var j = 0; j < lane.x.length; j += 2) {
            var de = span(lane.x[j] * bin), dw = Math.max(2, x(de[1]) - x(de[0]));
            if (de[1] < view.t0 || de[0] > view.t1) continue;
            dropped += 'M' + f(x(de[0])) + ' ' + (mid - 3) + 'h' + f(dw) + 'v6h' + f(-dw) + 'z';
          }
          return (up ? '<path class="d-up" d="' + up + '"/>' : '') + (down ? '<path class="d-down" d="' + down + '"/>' : '') +
            (dropped ? '<path class="d-drop" d="' + dropped + '"/>' : '');
        }
        function lane(l, i) {
          var y = rowsTop + i * LANE, mid = y + 14, out = [];
          var life = 'opened ' + seconds(l.opened) + (l.closed != null ? ', closed ' + seconds(l.closed) : ', still open at the end') +
            '\n' + l.up + ' bytes up, ' + l.down + ' bytes down\nclient ' + l.client;
          out.push('<g class="lane' + (i % 2 ? ' alt' : '') + (highlighted === l.id ? ' hl' : '') + '" id="' + run.id + '-c' + l.id + '" data-conn="' + l.id + '" data-lane="' + i + '">');
          out.push('<rect class="row-bg" x="0" y="' + y + '" width="' + width + '" height="' + LANE + '"/>');
          out.push('<text class="lane-label" x="6" y="' + (y + 18) + '"' + tipAttr('connection #' + l.id + '\n' + life) + '>#' + l.id + ' <tspan class="sub">' + esc(l.client) + '</tspan></text>');
          out.push('<g clip-path="url(#' + run.id + '-clip)">');
          var a = Math.max(LABEL, x(l.opened)), b = Math.min(width - RIGHT, x(l.closed == null ? run.end : l.closed));
          if (b >= a) out.push('<rect class="life" x="' + f(a) + '" y="' + (mid - 1) + '" width="' + f(Math.max(1, b - a)) + '" height="2"/>');
          out.push(density(l, mid));
          (byConn[l.id] || []).forEach(function (r) { out.push(requestBar(r, y + LANE - 5)); });
          l.marks.forEach(function (m) { if (inView(m.t)) out.push(mark(m, mid)); });
          out.push('</g></g>');
          return out.join('');
        }

        function render() {
          width = Math.max(640, box.clientWidth || 1000);
          height = rowsTop + run.lanes.length * LANE + 4;
          var out = ['<svg class="timeline-svg" width="' + width + '" height="' + height + '">',
            '<defs><clipPath id="' + run.id + '-clip"><rect x="' + LABEL + '" y="0" width="' + plot() + '" height="' + height + '"/></clipPath></defs>'];
          var step = niceStep(view.t1 - view.t0, Math.max(2, Math.floor(plot() / 110))), grid = '', ticks = '';
          for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
            grid += 'M' + f(x(t)) + ' ' + AXIS + 'V' + height;
            ticks += '<text x="' + f(x(t)) + '" y="14" text-anchor="middle">' + tickLabel(t, step) + '</text>';
          }
          out.push('<g class="axis">' + ticks + '</g><path class="grid" d="' + grid + '"/>');
          var stepsY = AXIS, relayY = AXIS + STEPS, clientY = relayY + ROW;
          out.push('<text x="6" y="' + (stepsY + 20) + '">steps</text><text x="6" y="' + (relayY + 14) + '">relay</text>');
          if (unplaced.length) out.push('<text x="6" y="' + (clientY + 14) + '">client, no connection</text>');
          out.push('<g class="steps" clip-path="url(#' + run.id + '-clip)">');
          var labelEnds = [0, 0];
          run.steps.forEach(function (s, i) {
            if (!inView(s.t)) return;
            // Two label rows; a label that would overlap the one before it on its row is left
            // out (the step's dot and its tooltip remain).
            var sx = f(x(s.t)), row = x(s.t) >= labelEnds[0] ? 0 : x(s.t) >= labelEnds[1] ? 1 : -1, level = row === 1 ? 27 : 13;
            var label = cut(s.text, 34);
            if (row >= 0) labelEnds[row] = x(s.t) + 10 + label.length * 6;
            out.push('<g class="step"' + tipAttr(seconds(s.t) + '  ' + s.text + (s.line ? '\nscenario line ' + s.line + ': ' + (s.source || '').trim() : '')) + '>' +
              '<line class="step-tick" x1="' + sx + '" x2="' + sx + '" y1="' + (stepsY + level) + '" y2="' + height + '"/>' +
              '<circle class="step-dot" cx="' + sx + '" cy="' + (stepsY + level - 4) + '" r="3.5"/>' +
              (row >= 0 ? '<text x="' + (x(s.t) + 6).toFixed(1) + '" y="' + (stepsY + level) + '">' + esc(label) + '</text>' : '') + '</g>');
          });
          out.push('</g><g class="relay-row" clip-path="url(#' + run.id + '-clip)">');
          run.relay.forEach(function (m) { if (inView(m.t)) out.push(mark(m, relayY + 10)); });
          unplaced.forEach(function (r) { out.push(requestBar(r, clientY + 8)); });
          out.push('</g>');
          run.lanes.forEach(function (l, i) { out.push(lane(l, i)); });
          if (focusAt != null && inView(focusAt)) out.push('<path class="focus-line" d="M' + f(x(focusAt)) + ' ' + AXIS + 'V' + height + '"/>');
          out.push('<rect class="brush" x="0" y="' + AXIS + '" width="0" height="' + (height - AXIS) + '" visibility="hidden"/></svg>');
          box.innerHTML = out.join('');
          range.textContent = seconds(view.t0) + ' – ' + seconds(view.t1) + (view.t1 - view.t0 < full ? ' (×' + (full / (view.t1 - view.t0)).toFixed(1) + ')' : '');
        }

        function setView(t0, t1) {
          var span = Math.max(100, Math.min(full, t1 - t0));
          t0 = Math.max(0, Math.min(t0, full - span));
          view = { t0: t0, t1: t0 + span };
          render();
        }
        function zoom(factor, around) { setView(around - (around - view.t0) * factor, around + (view.t1 - around) * factor); }

        var dragFrom = null;
        function localX(e) { return e.clientX - box.getBoundingClientRect().left; }
        box.addEventListener('mousedown', function (e) { if (e.button === 0 && localX(e) > LABEL) { dragFrom = localX(e); e.preventDefault(); } });
        box.addEventListener('mousemove', function (e) {
          var px = localX(e), brush = box.querySelector('.brush');
          if (dragFrom != null && brush) {
            brush.setAttribute('visibility', 'visible');
            brush.setAttribute('x', f(Math.max(LABEL, Math.min(px, dragFrom))));
            brush.setAttribute('width', f(Math.abs(px - dragFrom)));
          }
          var target = e.target.closest ? e.target.closest('[data-tip]') : null;
          if (target) { tip(target.getAttribute('data-tip'), e.clientX, e.clientY); return; }
          if (px <= LABEL) { tip(null); return; }
          var laneNode = e.target.closest ? e.target.closest('.lane') : null, t = timeAt(px), text = seconds(t);
          if (laneNode) {
            var l = run.lanes[Number(laneNode.getAttribute('data-lane'))], bin = Math.floor(t / run.bin);
            for (var i = 0; i < l.d.length; i += 3) if (l.d[i] === bin) text += '\n#' + l.id + ': ' + l.d[i + 1] + ' B up, ' + l.d[i + 2] + ' B down in ' + seconds(bin * run.bin) + ' + ' + short(run.bin);
            if (text === seconds(t)) text += '\n#' + l.id;
          }
          tip(text, e.clientX, e.clientY);
        });
        box.addEventListener('mouseleave', function () { tip(null); });
        window.addEventListener('mouseup', function (e) {
          if (dragFrom == null) return;
          var from = dragFrom, to = localX(e);
          dragFrom = null;
          if (Math.abs(to - from) > 4) setView(timeAt(Math.max(LABEL, Math.min(from, to))), timeAt(Math.max(from, to)));
          else { var brush = box.querySelector('.brush'); if (brush) brush.setAttribute('visibility', 'hidden'); }
        });
        box.addEventListener('wheel', function (e) {
          if (!e.altKey && !e.ctrlKey && !e.metaKey) return;
          e.preventDefault();
          zoom(e.deltaY > 0 ? 1.25 : 0.8, timeAt(Math.max(LABEL, localX(e))));
        }, { passive: false });
        box.addEventListener('dblclick', function (e) { zoom(2, timeAt(Math.max(LABEL, localX(e)))); });

        return {
          node: node,
          render: render,
          focus: function (t) { focusAt = t; setView(t - 1500000, t + 1500000); node.scrollIntoView({ block: 'nearest' }); },
          highlight: function (conn) {
            highlighted = conn;
            render();
            var lane = document.getElementById(run.id + '-c' + conn);
            if (lane) lane.scrollIntoView({ block: 'center' });
          }
        };
      }
      return { create: create };
    })();
    """#
}

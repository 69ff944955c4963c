/// The report page's scripts (see `HTMLReportPage` for why they are constants, not resources).
/// Plain browser JavaScript, no library: `errorCapture` runs first, `page` draws the header, the
/// matrix and each run (checks, requests), `timeline` (HTMLReportScript+Timeline.swift) the
/// swimlanes, `start` reads the data and builds the page.
enum HTMLReportScript {
    /// Records every script error and `console.error` on the root element (`data-errors`, a
    /// count, and `data-error-text`), so a page that broke says so in its own DOM — which the
    /// browser test reads — even when the browser's log is not at hand. It runs before the other
    /// scripts, so it sees their syntax errors too.
    static let errorCapture = #"""
    (function () {
      var errors = [];
      function note(text) {
        errors.push(String(text));
        document.documentElement.setAttribute('data-errors', String(errors.length));
        document.documentElement.setAttribute('data-error-text', errors.join('\n'));
      }
      window.addEventListener('error', function (e) { note(e.message || 'script error'); });
      window.addEventListener('unhandledrejection', function (e) { note('unhandled rejection: ' + e.reason); });
      var original = console.error;
      console.error = function () { note(Array.prototype.join.call(arguments, ' ')); return original.apply(console, arguments); };
    })();
    """#

    /// Reads the embedded data and builds the page; marks the root `data-rendered` when done.
    static let start = #"""
    NetsimReport.build(JSON.parse(document.getElementById('netsim-data').textContent));
    document.documentElement.setAttribute('data-rendered', 'yes');
    """#

    static let page = #"""
    var NetsimReport = (function () {
      'use strict';
      function el(tag, attrs, children) {
        var node = document.createElement(tag);
        for (var key in attrs || {}) {
          var value = attrs[key];
          if (value == null) continue;
          if (key === 'text') node.textContent = value;
          else if (key === 'class') node.className = value;
          else if (key.slice(0, 2) === 'on') node.addEventListener(key.slice(2), value);
          else node.setAttribute(key, value);
        }
        (children || []).forEach(function (child) { if (child != null) node.append(child); });
        return node;
      }
      function seconds(us) { return (us / 1e6).toFixed(6) + ' s'; }
      function short(us) {
        var s = Math.abs(us) / 1e6;
        if (s >= 1) return (us / 1e6).toFixed(3) + ' s';
        if (s >= 0.001) return (us / 1e3).toFixed(1) + ' ms';
        return us + ' µs';
      }
      var tipNode = null;
      function tip(text, clientX, clientY) {
        tipNode = tipNode || document.getElementById('tip');
        if (!text) { tipNode.hidden = true; return; }
        tipNode.textContent = text;
        tipNode.hidden = false;
        var left = Math.min(clientX + 14, window.innerWidth - tipNode.offsetWidth - 8);
        tipNode.style.left = Math.max(4, left) + 'px';
        tipNode.style.top = (clientY + 16) + 'px';
      }
      function state(run) { return run.error ? 'error' : run.passed ? 'pass' : 'fail'; }

      function header(data) {
        var failed = data.runs.filter(function (run) { return !run.passed; }).length;
        var total = data.runs.length;
        return el('header', { class: 'page' }, [
          el('h1', { text: 'netsim · ' + data.title }),
          el('div', { class: 'summary', text: (total - failed) + ' passed, ' + failed + ' failed' + (total > 1 ? ' (' + total + ' runs)' : '') })
        ]);
      }

      function matrix(m) {
        var head = el('tr', null, [el('th', { text: 'scenario' })].concat(m.drivers.map(function (d) { return el('th', { text: d }); })));
        var rows = m.scenarios.map(function (scenario, row) {
          return el('tr', null, [el('td', { text: scenario })].concat(m.cells[row].map(function (cell) {
            if (!cell) return el('td', { class: 'none', text: '—' });
            var more = cell.runs.length > 1 ? el('span', { class: 'runs' }, cell.runs.map(function (id, k) {
              return el('a', { href: '#' + id, title: 'run ' + (k + 1), text: String(k + 1) });
            })) : null;
            return el('td', { class: cell.state }, [el('a', { href: '#' + (cell.runs[0] || ''), text: cell.text }), more ? ' ' : null, more]);
          })));
        });
        return el('section', { id: 'matrix' }, [
          el('h2', { text: 'Client × scenario' }),
          el('table', { class: 'matrix' }, [el('thead', null, [head]), el('tbody', null, rows)])
        ]);
      }

      function checksTable(run, timeline) {
        var rows = run.checks.map(function (check) {
          var where = el('td', null, [el('code', { text: check.location }), check.source != null ? el('code', { class: 'source', text: check.source.trim() }) : null]);
          var show = check.focus != null ? el('button', { text: 'at ' + short(check.focus), title: 'zoom the timeline to ' + seconds(check.focus), onclick: function () { timeline.focus(check.focus); } }) : null;
          return el('tr', { class: 'check ' + (check.passed ? 'pass' : 'fail') }, [
            el('td', { class: 'verdict', text: check.passed ? '✔' : '✘' }),
            el('td', { text: check.title }),
            el('td', null, [el('pre', { text: check.expected })]),
            el('td', null, [el('pre', { text: check.actual }),
              check.note != null ? el('p', { class: 'meta', text: (check.passed ? 'but: ' : 'note: ') + check.note }) : null]),
            where, el('td', null, [show])
          ]);
        });
        var head = el('tr', null, ['', 'check', 'expected', 'happened', 'scenario line', ''].map(function (t) { return el('th', { text: t }); }));
        return el('table', { class: 'checks' }, [el('thead', null, [head]), el('tbody', null, rows)]);
      }

      // Rows for the first MAX_ROWS requests: a run may hold 100,000, and a row each made the page
      // crawl (QA 62). Every request stays a bar on its connection's lane.
      var MAX_ROWS = 1000;
      function requestsTable(run, timeline) {
        var rows = run.requests.slice(0, MAX_ROWS).map(function (r) {
          var conn = r.conn == null ? el('span', { class: 'meta', text: 'unknown' }) : el('a', {
            href: '#' + run.id + '-c' + r.conn, text: '#' + r.conn + (r.reused ? ' (reused)' : ''),
            onclick: function (e) { e.preventDefault(); timeline.highlight(r.conn); }
          });
          return el('tr', { class: 'request ' + (r.error ? 'fail' : 'pass') }, [
            el('td', { class: 'verdict', text: r.error ? '✘' : '✔' }),
            el('td', { text: r.label }), el('td', { class: 'mono', text: r.method + ' ' + r.path }),
            el('td', { class: 'mono', text: seconds(r.start) }), el('td', { text: r.summary }), el('td', null, [conn])
          ]);
        });
        var more = run.requests.length - rows.length;
        if (more > 0) {
          var failed = run.requests.slice(MAX_ROWS).filter(function (r) { return r.error; }).length;
          rows.push(el('tr', { class: 'more' }, [el('td'), el('td', { colspan: '5', class: 'meta',
            text: more + ' more request' + (more === 1 ? '' : 's') + ' (' + failed + ' failed) not listed: each is a bar on its connection\'s lane; --json lists every one' })]));
        }
        var head = el('tr', null, ['', 'request', '', 'started', 'outcome', 'connection'].map(function (t) { return el('th', { text: t }); }));
        return el('table', { class: 'requests' }, [el('thead', null, [head]), el('tbody', null, rows)]);
      }

      function fill(run, body) {
        if (run.error) { body.append(el('p', { class: 'error-text', text: 'netsim could not run it: ' + run.error })); return null; }
        var timeline = NetsimTimeline.create(run);
        body.append(
          run.description ? el('p', { class: 'desc', text: run.description }) : '',
          el('div', null, run.security.map(function (finding) { return el('p', { class: 'security', text: '⚠ ' + finding }); })),
          el('h3', { text: 'Checks' }), checksTable(run, timeline),
          timeline.node,
          el('h3', { text: 'Requests' }), requestsTable(run, timeline));
        timeline.render();
        return timeline;
      }

      var drawn = [];
      function section(run) {
        var failed = run.checks.filter(function (c) { return !c.passed; }).length;
        var meta = run.error ? run.file : run.file + ' · ' + run.checks.length + ' check' + (run.checks.length === 1 ? '' : 's') + ', ' + failed + ' failed · ' +
          short(run.duration) + ' · ' + run.lanes.length + ' connection' + (run.lanes.length === 1 ? '' : 's') + ' · seed ' + run.seed;
        var details = el('details', { class: 'run ' + state(run), id: run.id }, [el('summary', null, [
          el('span', { class: 'badge ' + state(run), text: run.error ? 'ERROR' : run.passed ? 'PASS' : 'FAIL' }),
          run.security.length ? el('span', { class: 'badge security', text: 'SECURITY' }) : '',
          el('span', { class: 'name', text: run.scenario }), el('span', { class: 'driver', text: run.driver }),
          el('span', { class: 'meta', text: ' · ' + meta })
        ])]);
        var body = el('div', { class: 'run-body' });
        details.append(body);
        var done = false;
        details.draw = function () {
          if (done || !details.open) return;
          done = true;
          var timeline = fill(run, body);
          if (timeline) drawn.push(timeline);
        };
        details.addEventListener('toggle', details.draw);
        return details;
      }

      function reveal() {
        var id = decodeURIComponent(location.hash.slice(1));
        var target = id && document.getElementById(id);
        var details = target && target.closest ? target.closest('details.run') : null;
        if (!details) return;
        details.open = true;
        details.draw();
        document.querySelectorAll('details.run.highlight').forEach(function (d) { d.classList.remove('highlight'); });
        details.classList.add('highlight');
        (document.getElementById(id) || details).scrollIntoView({ block: 'start' });
      }

      function build(data) {
        var app = document.getElementById('app');
        app.append(header(data));
        var main = el('main');
        app.append(main);
        if (data.matrix) main.append(matrix(data.matrix));
        var sections = data.runs.map(section);
        main.append(el('section', { id: 'runs' }, [data.runs.length > 1 ? el('h2', { text: 'Runs' }) : null].concat(sections)));
        // One run opens; in a suite the failures do (the first dozen), the passes wait for a click.
        var opened = 0;
        sections.forEach(function (details, i) {
          var run = data.runs[i];
          if (data.runs.length === 1 || (!run.passed && !run.error && opened++ < 12)) { details.open = true; details.draw(); }
        });
        window.addEventListener('hashchange', reveal);
        if (location.hash) reveal();
        var pending = null;
        window.addEventListener('resize', function () {
          clearTimeout(pending);
          pending = setTimeout(function () { drawn.forEach(function (t) { t.render(); }); }, 150);
        });
      }

      return { build: build, el: el, seconds: seconds, short: short, tip: tip };
    })();
    """#
}

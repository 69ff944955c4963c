/// The report page's style (see `HTMLReportPage` for why it is a constant, not a resource).
/// Colours name what they mean: the client's side is blue, the upstream's purple, the relay's
/// orange; failures and faults red, passes green.
enum HTMLReportStyle {
    static let css = #"""
    :root { --pass: #1a7f37; --fail: #cf222e; --flaky: #9a6700; --client: #0969da; --upstream: #8250df;
      --relay: #bc4c00; --muted: #57606a; --line: #d0d7de; --bg: #f6f8fa; --up: #54aeff; --down: #4ac26b; }
    * { box-sizing: border-box; }
    body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1f2328; background: #fff; }
    header.page { padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--bg); }
    header.page h1 { font-size: 18px; margin: 0 0 4px; }
    main { padding: 8px 20px 40px; }
    code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px; }
    .badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-weight: 600; font-size: 12px; color: #fff; }
    .badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
    .badge.flaky { background: var(--flaky); } .badge.error { background: #6e7781; }
    details.run { border: 1px solid var(--line); border-radius: 6px; margin: 12px 0; }
    details.run > summary { cursor: pointer; padding: 8px 12px; background: var(--bg); border-radius: 6px; }
    details.run > summary .name { font-weight: 600; margin: 0 6px; }
    details.run > summary .meta { color: var(--muted); }
    details.run.highlight { box-shadow: 0 0 0 3px #54aeff66; }
    .run-body { padding: 4px 12px 12px; }
    h3 { font-size: 14px; margin: 14px 0 6px; }
    table { border-collapse: collapse; width: 100%; }
    th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line); }
    th { font-weight: 600; color: var(--muted); font-size: 12px; }
    td.verdict { width: 1.5em; font-weight: 700; }
    tr.pass td.verdict { color: var(--pass); } tr.fail td.verdict { color: var(--fail); }
    tr.fail td { background: #ffebe933; }
    td pre { margin: 0; white-space: pre-wrap; font: inherit; }
    .source { display: block; color: var(--muted); }
    button { font: inherit; font-size: 12px; padding: 1px 8px; border: 1px solid var(--line); background: #fff; border-radius: 4px; cursor: pointer; }
    button:hover { background: var(--bg); }
    .controls { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; margin: 4px 0; }
    .controls .range { color: var(--muted); margin-left: 6px; }
    .legend { display: flex; gap: 12px; flex-wrap: wrap; color: var(--muted); font-size: 12px; margin: 2px 0 6px; }
    .legend svg { vertical-align: middle; }
    .timeline { position: relative; overflow-x: hidden; border: 1px solid var(--line); border-radius: 4px; user-select: none; }
    .timeline svg { display: block; }
    svg text { font: 11px system-ui, sans-serif; fill: #1f2328; }
    svg .axis text, svg .lane-label .sub { fill: var(--muted); font-size: 10px; }
    svg .grid { stroke: #eaeef2; stroke-width: 1; }
    svg .row-bg { fill: var(--bg); }
    svg .lane.alt .row-bg { fill: #fff; }
    svg .lane.hl .row-bg { fill: #ddf4ff; }
    svg .life { fill: #d0d7de88; }
    svg .d-up { fill: var(--up); } svg .d-down { fill: var(--down); } svg .d-drop { fill: var(--fail); opacity: .7; }
    svg .m-fault { fill: var(--fail); stroke: #fff; stroke-width: 1; }
    svg .m-lifted, svg .m-added { fill: #fff; stroke: var(--fail); stroke-width: 1.5; }
    svg .m-fin { stroke: #fff; stroke-width: .5; }
    svg .m-rst { stroke-width: 2.2; fill: none; }
    svg .m-end { stroke-width: 2; }
    svg .m-open { fill: none; stroke: #1f2328; stroke-width: 1.5; }
    svg .s-client { fill: var(--client); stroke: var(--client); }
    svg .s-upstream { fill: var(--upstream); stroke: var(--upstream); }
    svg .s-relay { fill: var(--relay); stroke: var(--relay); }
    svg .m-fin.s-client, svg .m-fin.s-upstream, svg .m-fin.s-relay { stroke: #fff; }
    svg .m-upstream { fill: var(--pass); } svg .m-upfail { fill: var(--fail); }
    svg .m-req { stroke: #1f2328; stroke-width: 1.5; }
    svg .m-resp { stroke-width: 2; stroke: var(--pass); }
    svg .m-resp.s-3xx { stroke: var(--flaky); } svg .m-resp.s-4xx, svg .m-resp.s-5xx { stroke: var(--fail); }
    svg .m-unobserved { fill: #8c959f; }
    svg .m-link { fill: var(--relay); } svg .m-listener { fill: var(--muted); }
    svg .step-tick { stroke: var(--relay); stroke-width: 1; stroke-dasharray: 3 3; }
    svg .step-dot { fill: var(--relay); }
    svg .focus-line { stroke: var(--fail); stroke-width: 1.5; stroke-dasharray: 4 2; }
    svg .r-ok { fill: var(--pass); } svg .r-err { fill: var(--fail); } svg .r-ok, svg .r-err { opacity: .85; }
    svg .brush { fill: #54aeff33; stroke: var(--client); }
    svg .step-tick, svg .grid, svg .focus-line, svg .brush, svg .life { pointer-events: none; }
    svg [data-tip]:hover { opacity: .75; }
    #tip { position: fixed; z-index: 10; pointer-events: none; background: #1f2328; color: #fff; font-size: 12px;
      padding: 4px 8px; border-radius: 4px; max-width: 520px; white-space: pre-wrap; }
    table.matrix { width: auto; min-width: 40%; }
    table.matrix td, table.matrix th { text-align: center; white-space: nowrap; padding: 4px 14px; }
    table.matrix td:first-child, table.matrix th:first-child { text-align: left; }
    table.matrix td.pass a { color: var(--pass); } table.matrix td.fail a { color: var(--fail); }
    table.matrix td.policy a { color: var(--flaky); }
    table.matrix td.flaky a { color: var(--flaky); } table.matrix td.error a { color: #6e7781; }
    table.matrix td a { font-weight: 600; text-decoration: none; }
    table.matrix td .runs a { font-weight: 400; font-size: 11px; margin: 0 2px; }
    .error-text { color: var(--fail); white-space: pre-wrap; }
    .security { color: var(--fail); font-weight: 600; margin: 6px 0; }
    .badge.security { background: var(--fail); margin-left: 4px; }
    """#
}

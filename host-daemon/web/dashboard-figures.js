/* The dashboard's overview, trend, pool, kinds, hosts and VMs; render(). */
/* --- the figures: overview, trend, pool, kinds, hosts, VMs ---------------- */

const SVG_NS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {}))
        if (v !== null && v !== undefined)
            e.setAttribute(k, String(v));
    for (const c of children)
        if (c !== null && c !== undefined)
            e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    return e;
}

function dist(d) {
    return d !== null && typeof d === 'object' ? d : {n: 0, p50: null, p95: null, max: null};
}
function fmtPair(d, fmt) {
    d = dist(d);
    return d.n > 0 ? fmt(d.p50) + ' / ' + fmt(d.p95) : '—';
}
function count(g, r) {
    return g && g.results && isNum(g.results[r]) ? g.results[r] : 0;
}
function failedOf(g) { return count(g, 'failed') + count(g, 'rolled-back'); }
/* Seconds as a stoppage (ms) or as a duration, whichever reads better. */
function fmtStop(s) { return isNum(s) ? (s < 1 ? fmtMs(s) : fmtDuration(s)) : '—'; }
function fmtDay(t) { return isNum(t) ? fmtTime(t).slice(5, 16) : '?'; }

function renderFilters() {
    const v = state.view;
    const st = state.stats;
    const fill = (id, names, cur) => {
        const sel = document.getElementById(id);
        const list = [...new Set(names.concat(cur ? [cur] : []))].sort();
        sel.replaceChildren(el('option', {value: ''}, 'any'),
            ...list.map((n) => el('option', {value: n}, n)));
        sel.value = cur;
    };
    fill('f-host', st && Array.isArray(st.hosts) ? st.hosts.map((h) => str(h.name)) : [], v.host);
    fill('f-domain', st && Array.isArray(st.domains) ? st.domains.map((h) => str(h.name)) : [], v.domain);
    document.getElementById('f-mode').value = v.mode;
    document.getElementById('f-result').value = v.result;
    document.getElementById('f-range').value = v.range;
    const parts = [];
    for (const [k, label] of [['host', 'host'], ['domain', 'VM'], ['mode', 'kind'], ['result', 'result']])
        if (v[k])
            parts.push(label + ' ' + v[k]);
    document.getElementById('f-summary').textContent =
        (parts.length ? parts.join(', ') + ': ' : '') + state.total + ' migration' +
        (state.total === 1 ? '' : 's') + (v.range !== 'all' ? ' in the ' + document.getElementById('f-range')
            .selectedOptions[0].textContent : '');
}

function tile(key, value, sub, attrs) {
    return el('div', Object.assign({class: 'tile'}, attrs || {}),
              el('div', {class: 'k'}, key), el('div', {class: 'v'}, value),
              sub ? el('div', {class: 's'}, sub) : null);
}

function renderOverview() {
    const box = document.getElementById('overview');
    const st = state.stats;
    if (st === null || typeof st !== 'object' || !st.all) {
        box.replaceChildren(el('span', {class: 'empty'}, 'No figures yet.'));
        return;
    }
    const a = st.all;
    const n = isNum(a.count) ? a.count : 0;
    const pct = (x) => n > 0 ? (100 * x / n).toFixed(1) + ' %' : '—';
    const tiles = [
        tile('migrations', String(st.total), st.total > st.count ? 'figures over the newest ' + st.count : null,
             {'data-figure': 'count', 'data-value': st.total}),
        tile('ok', pct(count(a, 'ok')), count(a, 'ok') + ' of ' + n, {'data-figure': 'ok', 'data-value': count(a, 'ok')}),
        tile('failed or rolled back', String(failedOf(a)), count(a, 'remoting') + ' remoting',
             {'data-figure': 'failed', 'data-value': failedOf(a)}),
    ];
    for (const [k, label] of [['pre', 'pre stoppage'], ['post', 'post stoppage'], ['downtime', 'VM downtime']]) {
        const d = dist(a[k]);
        tiles.push(tile(label + ' p50 / p95', fmtPair(d, fmtStop), d.n > 0 ? 'max ' + fmtStop(d.max) + ', ' + d.n + ' migrations' : null,
                        {'data-figure': k, 'data-p50': d.p50, 'data-p95': d.p95}));
    }
    tiles.push(tile('bytes moved', fmtBytes(a.bytes_moved), null,
                    {'data-figure': 'bytes', 'data-value': a.bytes_moved}));
    box.replaceChildren(...tiles);
}

/* One small chart of the trend: p50 and p95 of METRIC per bucket, the
 * bucket's count as grey bars; a gap where a bucket has no value. */
function trendChart(trend, metric, title) {
    const W = 296, H = 160, L = 50, R = 8, T = 8, B = 30;
    const pts = trend.map((b, i) => ({i: i, b: b, d: dist(b[metric])}));
    const t0 = trend.length ? trend[0].start : 0;
    const t1 = trend.length ? trend[trend.length - 1].end : 1;
    let ymax = 0, cmax = 0;
    for (const p of pts) {
        if (p.d.n > 0 && isNum(p.d.p95))
            ymax = Math.max(ymax, p.d.p95);
        cmax = Math.max(cmax, isNum(p.b.count) ? p.b.count : 0);
    }
    ymax = ymax > 0 ? ymax * 1.1 : 1;
    const x = (t) => L + (W - L - R) * (t - t0) / Math.max(1e-9, t1 - t0);
    const y = (v) => T + (H - T - B) * (1 - v / ymax);
    const g = svg('svg', {class: 'trend', 'data-metric': metric, width: W, height: H,
                          viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': title});
    for (const p of pts) {
        const c = isNum(p.b.count) ? p.b.count : 0;
        if (c > 0 && cmax > 0) {
            const h = (H - T - B) * 0.35 * c / cmax;
            g.append(svg('rect', {class: 'count', x: x(p.b.start) + 1, y: H - B - h,
                                  width: Math.max(1, x(p.b.end) - x(p.b.start) - 2), height: h},
                         svg('title', {}, c + ' migrations from ' + fmtTime(p.b.start) + ' to ' + fmtTime(p.b.end))));
        }
    }
    for (let k = 0; k <= 3; k++) {
        const v = ymax * k / 3;
        g.append(svg('line', {class: 'axis', x1: L, x2: W - R, y1: y(v), y2: y(v)}));
        g.append(svg('text', {x: L - 4, y: y(v) + 3, 'text-anchor': 'end'}, fmtStop(v)));
    }
    for (const [t, anchor] of [[t0, 'start'], [(t0 + t1) / 2, 'middle'], [t1, 'end']])
        g.append(svg('text', {x: x(t), y: H - B + 14, 'text-anchor': anchor}, fmtDay(t)));
    for (const q of ['p50', 'p95']) {
        /* Lines through consecutive buckets that have a value. */
        let run = [];
        const flush = () => {
            if (run.length > 1)
                g.append(svg('polyline', {class: q, points: run.join(' ')}));
            run = [];
        };
        for (const p of pts) {
            if (p.d.n > 0 && isNum(p.d[q]))
                run.push(x((p.b.start + p.b.end) / 2).toFixed(1) + ',' + y(p.d[q]).toFixed(1));
            else
                flush();
        }
        flush();
        for (const p of pts) {
            if (!(p.d.n > 0 && isNum(p.d[q])))
                continue;
            g.append(svg('circle', {class: q, r: 2.5, cx: x((p.b.start + p.b.end) / 2), cy: y(p.d[q]),
                                    'data-bucket': p.i, 'data-start': p.b.start, 'data-value': p.d[q],
                                    'data-count': p.d.n},
                         svg('title', {}, title + ' ' + q + ': ' + fmtStop(p.d[q]) + '\n' + fmtTime(p.b.start) +
                             ' – ' + fmtTime(p.b.end) + '\n' + p.d.n + ' migrations with a value, ' +
                             p.b.count + ' in all')));
        }
    }
    return el('div', {class: 'chart'}, el('h3', {}, title), g);
}

function renderTrend() {
    const box = document.getElementById('trend');
    const trend = state.stats && Array.isArray(state.stats.trend) ? state.stats.trend.filter(
        (b) => b !== null && typeof b === 'object' && isNum(b.start) && isNum(b.end)) : [];
    box.setAttribute('data-buckets', String(trend.length));
    if (trend.length === 0) {
        box.replaceChildren(el('span', {class: 'empty'}, 'No migrations in this view.'));
        return;
    }
    /* Downtime per kind: a live VM pauses for the last round of the copy
     * only, an offline one for all of it. */
    const charts = [trendChart(trend, 'pre', 'pre stoppage (before the move)'),
                    trendChart(trend, 'post', 'post stoppage (after the move)')];
    if (state.view.mode !== 'offline')
        charts.push(trendChart(trend, 'downtime_live', 'VM downtime, live'));
    if (state.view.mode !== 'live')
        charts.push(trendChart(trend, 'downtime_offline', 'VM downtime, offline (the whole copy)'));
    box.replaceChildren(...charts);
}

function renderPool() {
    const p = state.pool;
    const body = document.querySelector('#pool tbody');
    const wbody = document.querySelector('#waiting tbody');
    const box = document.getElementById('pool-box');
    const sum = document.getElementById('pool-summary');
    if (p === null || typeof p !== 'object') {
        box.setAttribute('data-known', 'false');
        sum.textContent = state.poolError || 'No pool view.';
        body.replaceChildren();
        wbody.replaceChildren();
        return;
    }
    const gpus = Array.isArray(p.gpus) ? p.gpus.filter((g) => g !== null && typeof g === 'object') : [];
    const waiting = Array.isArray(p.waiting) ? p.waiting.filter((w) => w !== null && typeof w === 'object') : [];
    box.setAttribute('data-known', 'true');
    box.setAttribute('data-free', String(p.free));
    box.setAttribute('data-held', String(p.held));
    box.setAttribute('data-waiting', String(waiting.length));
    sum.textContent = gpus.length + ' GPU' + (gpus.length === 1 ? '' : 's') + ' on ' + str(p.host) + ': ' +
        p.free + ' free, ' + p.held + ' held, ' + p.reserved + ' being attached; ' +
        waiting.length + ' VM' + (waiting.length === 1 ? '' : 's') + ' waiting' +
        (str(p.error) ? ' (' + p.error + ')' : '');
    const rows = gpus.map((g) => {
        const holder = str(g.holder);
        return el('tr', {'data-gpu': str(g.name), 'data-state': str(g.state), 'data-holder': holder},
            el('td', {}, str(g.name)),
            el('td', {class: 'muted'}, str(g.pci) || '—'),
            el('td', {}, el('span', {class: 'badge ' + str(g.state)}, str(g.state) || '?')),
            el('td', {}, holder ? vmLink(holder) : '—'));
    });
    if (rows.length === 0)
        rows.push(el('tr', {}, el('td', {class: 'empty', colspan: 4}, 'No GPU in this host\'s pool.')));
    body.replaceChildren(...rows);
    const wrows = waiting.map((w) => el('tr', {'data-domain': str(w.domain), 'data-migration-id': str(w.migration_id)},
        el('td', {}, vmLink(str(w.domain))),
        el('td', {}, ID_RE.test(str(w.migration_id)) ? idLink(w.migration_id) : str(w.migration_id)),
        el('td', {class: 'num', title: 'since ' + fmtTime(w.since)},
           isNum(w.since) && w.since > 0 ? fmtDuration(nowSeconds() - w.since) : '?')));
    if (wrows.length === 0)
        wrows.push(el('tr', {}, el('td', {class: 'empty', colspan: 3}, 'None.')));
    wbody.replaceChildren(...wrows);
}

/* Text that sets a filter when clicked. */
function filterLink(kind, name) {
    const a = el('span', {class: 'link', role: 'button', tabindex: '0', title: 'show only ' + name}, name);
    const act = () => go({[kind]: name});
    a.addEventListener('click', act);
    a.addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter')
            act();
    });
    return a;
}
function vmLink(name) { return filterLink('domain', name); }
function idLink(id) {
    const a = el('span', {class: 'link', role: 'button', tabindex: '0'}, id);
    a.addEventListener('click', () => select(id));
    return a;
}

function renderKinds() {
    const body = document.querySelector('#kinds tbody');
    const modes = state.stats && Array.isArray(state.stats.modes) ? state.stats.modes : [];
    body.replaceChildren(...modes.filter((g) => g && typeof g === 'object').map((g) => {
        const n = isNum(g.count) ? g.count : 0;
        return el('tr', {'data-mode': str(g.name), 'data-count': n, 'data-bytes': g.bytes_moved},
            el('td', {}, str(g.name)),
            el('td', {class: 'num'}, String(n)),
            el('td', {class: 'num'}, String(count(g, 'ok'))),
            el('td', {class: 'num'}, String(failedOf(g))),
            el('td', {class: 'num downtime', 'data-p50': dist(g.downtime).p50, 'data-p95': dist(g.downtime).p95},
               fmtPair(g.downtime, fmtStop)),
            el('td', {class: 'num'}, fmtPair(g.duration, fmtDuration)),
            el('td', {class: 'num', title: g.bytes_moved + ' bytes'}, fmtBytes(g.bytes_moved)),
            el('td', {class: 'num'}, n > 0 ? fmtBytes(Math.round(g.bytes_moved / n)) : '—'));
    }));
}

function groupRows(id, groups, kind) {
    const body = document.querySelector('#' + id + ' tbody');
    const rows = groups.filter((g) => g && typeof g === 'object').map((g) => {
        const cells = [el('td', {}, filterLink(kind, str(g.name))),
                       el('td', {class: 'num'}, String(g.count))];
        if (kind === 'host')
            cells.push(el('td', {class: 'num'}, g.as_source + ' / ' + g.as_destination));
        cells.push(el('td', {class: 'num'}, String(failedOf(g))));
        for (const k of ['pre', 'post', 'downtime'])
            cells.push(el('td', {class: 'num ' + k, 'data-p95': dist(g[k]).p95},
                          dist(g[k]).n > 0 ? fmtStop(dist(g[k]).p95) : '—'));
        if (kind === 'host')
            cells.push(el('td', {class: 'num', title: g.bytes_moved + ' bytes'}, fmtBytes(g.bytes_moved)));
        else
            cells.push(el('td', {title: fmtTimeExact(g.last_start)}, fmtTime(g.last_start)));
        return el('tr', {['data-' + (kind === 'host' ? 'host' : 'domain')]: str(g.name), 'data-count': g.count},
                  ...cells);
    });
    if (rows.length === 0)
        rows.push(el('tr', {}, el('td', {class: 'empty', colspan: 8}, 'None in this view.')));
    body.replaceChildren(...rows);
}

function renderGroups() {
    const st = state.stats || {};
    groupRows('hosts', Array.isArray(st.hosts) ? st.hosts : [], 'host');
    groupRows('domains', Array.isArray(st.domains) ? st.domains : [], 'domain');
}

function render() {
    renderHeading();
    renderLive();
    renderFilters();
    renderOverview();
    renderTrend();
    renderPool();
    renderKinds();
    renderGroups();
    renderHistory();
    renderDetail();
    if (state.reveal && state.chosen !== null && state.details.has(state.chosen)) {
        state.reveal = false;
        document.getElementById('detail').scrollIntoView();
    }
}

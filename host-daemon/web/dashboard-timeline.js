/* The selected migration's timeline, its steps, its hypervisor job. */
/* Tick spacing for SPAN seconds over about WIDTH pixels: 1, 2 or 5 times
 * a power of ten, about 90 px apart. */
function tickStep(span, width) {
    const raw = span / Math.max(1, Math.floor(width / 90));
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const f of [1, 2, 5, 10]) {
        if (raw <= f * p)
            return f * p;
    }
    return 10 * p;
}

function fmtTick(t, step) {
    const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    return t.toFixed(digits) + ' s';
}

let measureCtx = null;
function textWidth(s) {
    if (measureCtx === null) {
        const c = document.createElement('canvas').getContext('2d');
        measureCtx = c !== null ? c : false;
        if (measureCtx)
            measureCtx.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
    }
    return measureCtx ? measureCtx.measureText(s).width : s.length * 6.5;
}

/*
 * Lays out a lane's BARS ({start, dur, label}) on a track of WIDTH px for
 * the span [T0, T0 + SPAN]: each label goes inside its bar when it fits,
 * else to its right (or its left near the end), and each bar takes the
 * first row where neither it nor its label overlaps another.  Returns the
 * number of rows.
 */
function layout(bars, t0, span, width) {
    const px = width / span;
    for (const b of bars) {
        const x0 = (b.start - t0) * px;
        const w = Math.max(2, b.dur * px);
        const lw = textWidth(b.label) + 8;
        if (lw <= w) {
            b.place = 'in';
            b.from = x0;
            b.to = x0 + w;
        } else if (x0 + w + lw <= width || x0 - lw < 0) {
            b.place = 'right';
            b.from = x0;
            b.to = x0 + w + lw;
        } else {
            b.place = 'left';
            b.from = x0 - lw;
            b.to = x0 + w;
        }
    }
    const ends = [];
    for (const b of [...bars].sort((a, c) => a.from - c.from)) {
        let r = ends.findIndex((end) => end <= b.from);
        if (r < 0) {
            r = ends.length;
            ends.push(0);
        }
        ends[r] = b.to + 2;
        b.row = r;
    }
    return Math.max(1, ends.length);
}

const ROW_PX = 18;

function pct(v, span) { return (v / span * 100) + '%'; }

function stepTitle(s, who) {
    const end = s.start_offset + s.duration;
    return s.phase + ' — ' + who + '\n' +
        'start: ' + s.start_offset + ' s after the migration began\n' +
        'duration: ' + s.duration + ' s (' + s.duration * 1000 + ' ms)\n' +
        'end: ' + end + ' s';
}

function laneName(lane) {
    if (lane.pid === 0)
        return el('div', {class: 'lane-name', title: 'host steps'}, el('b', {}, 'host'));
    return el('div', {class: 'lane-name', title: 'pid ' + lane.pid + ' ' + lane.program},
              el('b', {}, 'pid ' + lane.pid), ' ' + lane.program);
}

function track(rows, t0, span, tick, now) {
    const t = el('div', {class: 'track'});
    t.style.height = (rows * ROW_PX + 2) + 'px';
    for (let v = Math.ceil(t0 / tick) * tick; v <= t0 + span + 1e-9; v += tick) {
        const g = el('div', {class: 'grid'});
        g.style.left = pct(v - t0, span);
        t.append(g);
    }
    if (now !== null) {
        const n = el('div', {class: 'now', title: 'now: ' + now.toFixed(3) + ' s'});
        n.style.left = pct(now - t0, span);
        t.append(n);
    }
    return t;
}

function renderTimeline(m) {
    const box = document.getElementById('timeline');
    const steps = (Array.isArray(m.steps) ? m.steps : []).filter(
        (s) => s !== null && typeof s === 'object' && isNum(s.start_offset) && isNum(s.duration));
    const running = isRunning(m);
    const now = running ? duration(m) : null;
    let t0 = 0;
    let t1 = Math.max(stepsEnd(m), isNum(duration(m)) ? duration(m) : 0);
    for (const s of steps) {
        t0 = Math.min(t0, s.start_offset);
        t1 = Math.max(t1, s.start_offset + Math.max(0, s.duration));
    }
    const span = Math.max(t1 - t0, 0.001);

    /* The lanes: host steps first, then each program in order of its
     * first step. */
    const lanes = new Map([['0', {pid: 0, program: '', bars: []}]]);
    for (const s of steps) {
        const pid = isHost(s) ? 0 : s.pid;
        const key = pid === 0 ? '0' : pid + '\u0000' + str(s.program);
        if (!lanes.has(key))
            lanes.set(key, {pid: pid, program: str(s.program), bars: []});
        const who = pid === 0 ? 'host' : 'pid ' + pid + ' ' + str(s.program);
        lanes.get(key).bars.push({
            step: s, start: s.start_offset, dur: Math.max(0, s.duration), who: who,
            label: str(s.phase) + ' ' + (pid === 0 ? fmtDuration(s.duration) : fmtMs(s.duration)),
        });
    }
    const width = Math.max(200, box.clientWidth - 190 - 12);
    const tick = tickStep(span, width);

    const axis = el('div', {class: 'lane axis'}, el('div', {class: 'lane-name'}, 'seconds'));
    const at = el('div', {class: 'track'});
    for (let v = Math.ceil(t0 / tick) * tick; v <= t0 + span + 1e-9; v += tick) {
        const tk = el('div', {class: 'tick'}, fmtTick(v, tick));
        tk.style.left = pct(v - t0, span);
        at.append(tk);
    }
    axis.append(at);
    const out = [axis];

    const step = running ? currentStep(m) : null;
    for (const lane of lanes.values()) {
        const extra = [];
        if (lane.pid === 0 && running) {
            /* The step under way: from the last host step to now. */
            const from = lane.bars.reduce((e, b) => Math.max(e, b.start + b.dur), 0);
            extra.push({pending: true, start: from, dur: Math.max(0, now - from), label: step + ' …'});
        }
        const all = lane.bars.concat(extra);
        const rows = layout(all, t0, span, width);
        const t = track(rows, t0, span, tick, now);
        for (const b of all) {
            let bar;
            if (b.pending) {
                bar = el('div', {class: 'pending', 'data-step': step,
                                 title: step + ' — under way since ' + b.start + ' s'},
                         el('span', {class: 'label'}, b.label));
            } else {
                const s = b.step;
                const kind = lane.pid === 0 ? (s.phase === 'rollback' ? 'host rollback' : 'host')
                    : (s.phase === 'pre' || s.phase === 'post' ? s.phase : 'other');
                bar = el('div', {class: 'bar ' + kind, 'data-phase': str(s.phase),
                                 'data-pid': lane.pid, 'data-program': lane.pid === 0 ? null : lane.program,
                                 'data-start': s.start_offset, 'data-seconds': s.duration,
                                 title: stepTitle(s, b.who)},
                         el('span', {class: 'label ' + b.place}, b.label));
            }
            bar.style.left = pct(b.start - t0, span);
            bar.style.width = pct(b.dur, span);
            bar.style.top = (b.row * ROW_PX + 2) + 'px';
            t.append(bar);
        }
        out.push(el('div', {class: 'lane', 'data-pid': lane.pid}, laneName(lane), t));
    }
    box.replaceChildren(...out);
}

function renderStepsTable(m) {
    const body = document.querySelector('#steps tbody');
    const steps = Array.isArray(m.steps) ? m.steps : [];
    const rows = steps.filter((s) => s !== null && typeof s === 'object').map((s) => el('tr',
        {'data-phase': str(s.phase), 'data-pid': isHost(s) ? 0 : s.pid},
        el('td', {}, str(s.phase)),
        el('td', {}, isHost(s) ? 'host' : 'pid ' + s.pid + ' ' + str(s.program)),
        el('td', {class: 'num', title: s.start_offset + ' s'},
           isNum(s.start_offset) ? s.start_offset.toFixed(3) + ' s' : '?'),
        el('td', {class: 'num', title: s.duration + ' s'},
           isStoppage(s) ? fmtMs(s.duration) : fmtDuration(s.duration))));
    if (rows.length === 0)
        rows.push(el('tr', {}, el('td', {class: 'empty', colspan: 4}, 'No steps recorded.')));
    body.replaceChildren(...rows);
    renderJobTable(m);
}

/* The hypervisor's figures of M's job (its "job"), a row each, in the
 * order virsh domjobinfo prints them; hidden when there are none. */
function renderJobTable(m) {
    const box = document.getElementById('jobinfo');
    const j = m && m.job !== null && typeof m.job === 'object' ? m.job : null;
    const rows = [];
    const b = (k) => isNum(j[k]) ? fmtBytes(j[k]) : '?';
    const sec = (k) => isNum(j[k]) ? fmtMs(j[k]) : '?';
    const n = (k, unit) => isNum(j[k]) ? String(j[k]) + unit : '?';
    if (j) {
        for (const [name, key, text] of [
            ['Time elapsed', 'elapsed', sec('elapsed')],
            ['Data processed', 'data_processed', b('data_processed')],
            ['Data remaining', 'data_remaining', b('data_remaining')],
            ['Data total', 'data_total', b('data_total')],
            ['Memory processed', 'memory_processed', b('memory_processed')],
            ['Memory total', 'memory_total', b('memory_total')],
            ['Memory bandwidth', 'memory_bps', b('memory_bps') + '/s'],
            ['Dirty rate', 'dirty_rate', n('dirty_rate', ' pages/s')],
            ['Iteration', 'iterations', n('iterations', '')],
            ['File processed', 'disk_processed', b('disk_processed')],
            ['File total', 'disk_total', b('disk_total')],
            ['Expected downtime', 'expected_downtime', sec('expected_downtime')],
            ['Total downtime', 'downtime', sec('downtime')],
            ['Setup time', 'setup_time', sec('setup_time')],
        ])
            rows.push(el('tr', {'data-key': key},
                         el('td', {}, name), el('td', {class: 'num'}, text)));
    }
    box.hidden = rows.length === 0;
    box.querySelector('tbody').replaceChildren(...rows);
}

function renderDetail() {
    const id = selectedId();
    const title = document.getElementById('detail-title');
    const summary = document.getElementById('summary');
    const detail = document.getElementById('detail');
    const m = id !== null ? state.details.get(id) : undefined;
    detail.setAttribute('data-migration-id', id !== null ? id : '');
    if (m === undefined) {
        title.textContent = 'Timeline';
        const why = id === null ? 'No migration to show.'
            : state.missing.has(id) ? 'No migration ' + id + '.' : 'Loading ' + id + '…';
        summary.replaceChildren(el('span', {class: 'empty'}, why));
        document.getElementById('timeline').replaceChildren();
        document.querySelector('#steps tbody').replaceChildren();
        return;
    }
    title.textContent = 'Timeline of ' + m.id + ': ' + str(m.domain) + ', ' + hostsText(m);
    const kv = (k, v, attrs) => el('span', attrs || {}, el('span', {class: 'k'}, k), v);
    const parts = [
        badge(m.result),
        kv('mode', str(m.mode)),
        kv('started', fmtTime(m.start_time), {title: fmtTimeExact(m.start_time)}),
        kv(isRunning(m) ? 'running for' : 'took', fmtDuration(duration(m))),
        kv('moved', bytesText(m), {title: bytesTitle(m)}),
    ];
    if (str(m.error) !== '')
        parts.push(kv('error', el('span', {class: 'error-text'}, m.error), {class: 'error'}));
    summary.replaceChildren(...parts);
    renderTimeline(m);
    renderStepsTable(m);
}

/* The dashboard's view (the fragment), its data from the API, polling. */
/* --- the data -------------------------------------------------------- */

/* The freshest view of migration ID: its details when fetched (they are
 * never older than the list entry), else the list entry. */
function best(m) {
    return state.details.get(m.id) || m;
}

function isRunning(m) { return m.result === 'running'; }

/* How long M took, or has run so far. */
function duration(m) {
    if (!isNum(m.start_time))
        return null;
    if (isRunning(m))
        return Math.max(0, nowSeconds() - m.start_time, stepsEnd(m));
    return isNum(m.end_time) ? m.end_time - m.start_time : null;
}

/* Where M's last step ends, in seconds from its start (0 without steps). */
function stepsEnd(m) {
    let end = 0;
    for (const s of Array.isArray(m.steps) ? m.steps : []) {
        if (isNum(s.start_offset) && isNum(s.duration))
            end = Math.max(end, s.start_offset + s.duration);
    }
    return end;
}

/* The longest stoppage in PHASE ("pre" or "post") of any of M's programs;
 * undefined while M's steps are not known, null when it has none. */
function worst(m, phase) {
    if (!Array.isArray(m.steps))
        return undefined;
    let w = null;
    for (const s of m.steps) {
        if (!isHost(s) && s.phase === phase && isNum(s.duration))
            w = w === null ? s.duration : Math.max(w, s.duration);
    }
    return w;
}

/* The step a running migration is in: memory copy ("migrate") from the
 * detach until the migrate step is recorded, else the last step stored. */
function currentStep(m) {
    const steps = Array.isArray(m.steps) ? m.steps : [];
    const host = steps.filter(isHost).map((s) => s.phase);
    /* (A destination's row knows the bytes from Arrive: it copies none.) */
    if (!host.includes('migrate') && !host.includes('arrive') &&
        (host.includes('detach') || m.bytes_moved > 0))
        return 'migrate';
    return steps.length > 0 ? str(steps[steps.length - 1].phase) : 'migrate';
}

/* This host's name: the one named in every migration (preferring the one
 * that is most often the source), or null when the data does not say. */
function hostName(list) {
    let common = null;
    const asSource = new Map();
    for (const m of list) {
        const names = new Set([str(m.source), str(m.destination)]);
        common = common === null ? names : new Set([...common].filter((h) => names.has(h)));
        asSource.set(m.source, (asSource.get(m.source) || 0) + 1);
    }
    if (common === null)
        return null;
    const names = [...common].filter((h) => h !== '');
    names.sort((a, b) => (asSource.get(b) || 0) - (asSource.get(a) || 0));
    return names.length > 0 ? names[0] : null;
}

/* The id shown in the timeline: the one asked for, else the newest. */
function selectedId() {
    if (state.chosen !== null)
        return state.chosen;
    return state.list.length > 0 ? state.list[0].id : null;
}

/* The view the fragment asks for: #key=value&...; anything malformed is
 * left out (the fragment is the user's to type). */
function viewFromLocation() {
    let p;
    try {
        p = new URLSearchParams(location.hash.replace(/^#/, ''));
    } catch (e) {
        p = new URLSearchParams();
    }
    const name = (k) => {
        const v = p.get(k);
        return v !== null && v.length > 0 && v.length <= 255 && !/[\u0000-\u001f\u007f]/.test(v) ? v : '';
    };
    const page = Number.parseInt(p.get('page') || '1', 10);
    const id = p.get('id');
    return {
        host: name('host'),
        domain: name('domain'),
        mode: MODES.includes(p.get('mode')) ? p.get('mode') : '',
        result: RESULTS.includes(p.get('result')) ? p.get('result') : '',
        range: Object.hasOwn(RANGES, p.get('range')) ? p.get('range') : DEFAULT_RANGE,
        page: Number.isInteger(page) && page >= 1 && page <= 1000000 ? page : 1,
        id: id !== null && ID_RE.test(id) ? id : null,
    };
}

/* The fragment for VIEW (defaults left out). */
function viewHash(view) {
    const p = new URLSearchParams();
    for (const k of ['host', 'domain', 'mode', 'result'])
        if (view[k])
            p.set(k, view[k]);
    if (view.range !== DEFAULT_RANGE)
        p.set('range', view.range);
    if (view.page > 1)
        p.set('page', String(view.page));
    if (view.id)
        p.set('id', view.id);
    return '#' + p.toString();
}

/* Goes to the view CHANGE makes of the current one (a new filter starts
 * at the first page). */
function go(change) {
    const v = Object.assign({}, state.view, change);
    if (!('page' in change))
        v.page = 1;
    location.hash = viewHash(v);
}

/* The filter's query parameters for the API: names, kind, result, and the
 * time range as since/until (until a minute ahead: clocks differ). */
function filterParams() {
    const v = state.view;
    const p = new URLSearchParams();
    for (const k of ['host', 'domain', 'mode', 'result'])
        if (v[k])
            p.set(k, v[k]);
    const r = RANGES[v.range];
    if (r.seconds > 0) {
        const now = Math.floor(nowSeconds());
        p.set('since', String(now - r.seconds));
        p.set('until', String(now + 60));
    }
    return p;
}

async function getJSON(path) {
    const r = await fetch(path, {cache: 'no-store', headers: {Accept: 'application/json'}});
    let body = null;
    try {
        body = await r.json();
    } catch (e) {
        body = null;
    }
    if (!r.ok) {
        const msg = body !== null && typeof body.error === 'string' ? body.error : 'HTTP ' + r.status;
        const err = new Error(path + ': ' + msg);
        err.status = r.status;
        throw err;
    }
    if (body === null || typeof body !== 'object')
        throw new Error(path + ': not JSON');
    return body;
}

/* Fetches the details of each id in IDS, a few at a time. */
async function fetchDetails(ids) {
    let next = 0;
    async function worker() {
        while (next < ids.length) {
            const id = ids[next++];
            try {
                const m = await getJSON('/api/migrations/' + encodeURIComponent(id));
                if (m.id === id) {
                    state.details.set(id, m);
                    state.missing.delete(id);
                }
            } catch (e) {
                if (e.status === 404) {
                    state.details.delete(id);
                    state.missing.add(id);
                } else {
                    throw e;
                }
            }
        }
    }
    const n = Math.min(FETCH_PARALLEL, ids.length);
    await Promise.all(Array.from({length: n}, worker));
}

/* Whether the list entry M says more than the details we hold. */
function isStale(m) {
    const d = state.details.get(m.id);
    return d === undefined || isRunning(d) || isRunning(m) || d.result !== m.result ||
        d.end_time !== m.end_time || d.bytes_moved !== m.bytes_moved;
}

/* One poll: the page of the history, the running ones, the stats and the
 * pool, then the details of whatever changed or runs.  A call while one
 * is under way makes that one run again when it ends. */
async function refresh() {
    if (state.polling) {
        state.again = true;
        return;
    }
    state.polling = true;
    clearTimeout(state.timer);
    try {
        const v = state.view;
        const q = filterParams();
        const page = new URLSearchParams(q);
        page.set('limit', String(PAGE_SIZE));
        page.set('offset', String((v.page - 1) * PAGE_SIZE));
        const stats = new URLSearchParams(q);
        stats.set('buckets', String(RANGES[v.range].buckets));
        const [data, run, st] = await Promise.all([
            getJSON('/api/migrations?' + page.toString()),
            getJSON('/api/migrations?result=running&limit=' + RUNNING_LIMIT),
            getJSON('/api/stats?' + stats.toString()),
        ]);
        let pool = null;
        try {
            pool = await getJSON('/api/pool');
            state.poolError = null;
        } catch (e) {
            state.poolError = e.status === 404 ? 'This server has no GPU pool.'
                : e instanceof Error ? e.message : String(e);
        }
        const clean = (a) => (Array.isArray(a) ? a : []).filter(
            (m) => m !== null && typeof m === 'object' && typeof m.id === 'string' && ID_RE.test(m.id));
        const list = clean(data.migrations);
        const running = clean(run.migrations);
        const want = [...new Set(list.concat(running).filter(isStale).map((m) => m.id))];
        const sel = state.chosen;
        if (sel !== null && !list.some((m) => m.id === sel) && !state.missing.has(sel)) {
            const d = state.details.get(sel);
            if (d === undefined || isRunning(d))
                want.push(sel);
        }
        await fetchDetails(want);
        state.list = list;
        state.total = isNum(data.total) ? data.total : list.length;
        state.running = running;
        state.stats = st;
        state.pool = pool;
        const keep = new Set(list.concat(running).map((m) => m.id));
        for (const id of [...state.details.keys()]) {
            if (!keep.has(id) && id !== sel)
                state.details.delete(id);
        }
        state.error = null;
        state.updated = new Date();
    } catch (e) {
        state.error = e instanceof Error ? e.message : String(e);
    }
    state.polling = false;
    try {
        render();
    } finally {
        /* A rendering bug is reported (uncaught) but stops no polling. */
        if (state.again) {
            state.again = false;
            refresh();
        } else {
            schedule();
        }
    }
}

function schedule() {
    clearTimeout(state.timer);
    const running = state.running.some((m) => isRunning(best(m)));
    state.timer = setTimeout(refresh, running ? POLL_RUNNING_MS : POLL_IDLE_MS);
}

/* The dashboard's heading, history table and live panel. */
/* --- rendering ------------------------------------------------------- */

function badge(result) {
    const known = ['ok', 'rolled-back', 'failed', 'running', 'remoting'];
    const r = str(result) || '?';
    return el('span', {class: 'badge' + (known.includes(r) ? ' ' + r : '')}, r);
}

function hostsText(m) {
    return str(m.source) + ' → ' + str(m.destination);
}

function renderHeading() {
    const host = state.pool !== null && typeof state.pool.host === 'string' && state.pool.host !== ''
        ? state.pool.host : hostName(state.list);
    const text = 'crane — migrations' + (host !== null ? ' on ' + host : '');
    document.title = text;
    document.getElementById('heading').textContent = text;
    const st = document.getElementById('status');
    const running = state.running.some((m) => isRunning(best(m)));
    if (state.error !== null) {
        st.className = 'error';
        st.textContent = 'cannot update: ' + state.error;
    } else if (state.updated !== null) {
        st.className = '';
        st.textContent = 'updated ' + state.updated.toLocaleTimeString() + ', every ' +
            (running ? POLL_RUNNING_MS : POLL_IDLE_MS) / 1000 + ' s';
    }
    /* A full or read-only disk: migrations this host ran that its history
     * (what this page shows) does not have yet. */
    const h = state.pool !== null && typeof state.pool === 'object' ? state.pool.history : null;
    if (h !== null && typeof h === 'object' && h.degraded === true) {
        st.className = 'error';
        st.setAttribute('data-history', 'degraded');
        st.textContent += ' — history degraded' + (h.read_only === true ? ' (read-only)' : '') + ': ' +
            (isNum(h.unsaved) ? h.unsaved : '?') + ' migration(s) kept in memory only' +
            (isNum(h.dropped) && h.dropped > 0 ? ', ' + h.dropped + ' lost' : '') +
            (str(h.reason) ? ' (' + h.reason + ')' : '');
    } else {
        st.removeAttribute('data-history');
    }
}

/* The VM's own downtime (host step "downtime"); undefined while M's steps
 * are not known, null when the hypervisor reported none. */
function downtime(m) {
    if (!Array.isArray(m.steps))
        return undefined;
    let d = null;
    for (const s of m.steps)
        if (isHost(s) && s.phase === 'downtime' && isNum(s.duration))
            d = s.duration;
    return d;
}

function downtimeCell(m) {
    const d = downtime(m);
    return el('td', {class: 'num downtime', 'data-seconds': isNum(d) ? d : null,
                     title: isNum(d) ? d + ' s' : null},
              d === undefined ? '…' : d === null ? '—' : fmtMs(d));
}

function stoppageCell(m, phase) {
    const w = worst(m, phase);
    return el('td', {class: 'num worst-' + phase, 'data-seconds': isNum(w) ? w : null,
                     title: isNum(w) ? w + ' s' : null},
              w === undefined ? '…' : w === null ? '—' : fmtMs(w));
}

/* Bytes moved as shown: a migration that moved the VM but whose
 * hypervisor reported no count (libxl reports none) says so rather than
 * "0 B". */
function bytesUnreported(m) {
    return m.bytes_moved === 0 && (m.result === 'ok' || m.result === 'remoting');
}
function bytesText(m) {
    return bytesUnreported(m) ? 'not reported' : fmtBytes(m.bytes_moved);
}
function bytesTitle(m) {
    if (bytesUnreported(m))
        return 'the hypervisor reported no byte count for this migration (libxl reports none)';
    return isNum(m.bytes_moved) ? m.bytes_moved + ' bytes' : null;
}

function renderHistory() {
    const body = document.querySelector('#history tbody');
    const sel = selectedId();
    const rows = [];
    /* The rows are rebuilt on each poll: keep the keyboard focus. */
    const active = document.activeElement;
    const focused = active !== null && body.contains(active) ? active.getAttribute('data-migration-id') : null;
    let refocus = null;
    for (const entry of state.list) {
        const m = best(entry);
        const dur = duration(m);
        const result = el('td', {class: 'result'}, badge(m.result));
        if (str(m.error) !== '')
            result.append(el('span', {class: 'error-text', title: m.error}, m.error));
        const tr = el('tr', {'data-migration-id': m.id, 'data-result': str(m.result),
                             class: m.id === sel ? 'selected' : null,
                             'aria-selected': m.id === sel ? 'true' : 'false'},
            el('td', {class: 'id'}, m.id),
            el('td', {class: 'domain'}, str(m.domain)),
            el('td', {class: 'hosts'}, hostsText(m)),
            el('td', {class: 'mode'}, str(m.mode)),
            el('td', {class: 'start', title: fmtTimeExact(m.start_time)}, fmtTime(m.start_time)),
            el('td', {class: 'num duration', 'data-seconds': isNum(dur) ? dur : null,
                      title: isNum(dur) ? dur + ' s' : null},
               fmtDuration(dur) + (isRunning(m) ? ' …' : '')),
            result,
            el('td', {class: 'num bytes', 'data-bytes': isNum(m.bytes_moved) ? m.bytes_moved : null,
                      title: bytesTitle(m)},
               bytesText(m)),
            stoppageCell(m, 'pre'),
            stoppageCell(m, 'post'),
            downtimeCell(m));
        tr.setAttribute('tabindex', '0');
        tr.addEventListener('click', () => select(m.id));
        tr.addEventListener('keydown', (ev) => {
            if (ev.key === 'Enter' || ev.key === ' ') {
                ev.preventDefault();
                select(m.id);
            }
        });
        if (m.id === focused)
            refocus = tr;
        rows.push(tr);
    }
    const filtered = ['host', 'domain', 'mode', 'result'].some((k) => state.view[k]) ||
        state.view.range !== 'all' || state.view.page > 1;
    if (rows.length === 0)
        rows.push(el('tr', {}, el('td', {class: 'empty', colspan: 11},
                                  state.error !== null ? 'No data.'
                                  : filtered ? 'No migration matches these filters on this page.'
                                  : 'No migrations recorded yet.')));
    body.replaceChildren(...rows);
    const table = document.getElementById('history');
    const offset = (state.view.page - 1) * PAGE_SIZE;
    table.setAttribute('data-total', String(state.total));
    table.setAttribute('data-offset', String(offset));
    document.getElementById('page-info').textContent = state.list.length > 0
        ? (offset + 1) + '–' + (offset + state.list.length) + ' of ' + state.total
        : '0 of ' + state.total;
    document.getElementById('newer').disabled = state.view.page <= 1;
    document.getElementById('older').disabled = offset + state.list.length >= state.total;
    if (refocus !== null)
        refocus.focus({preventScroll: true});
}

function renderLive() {
    const live = document.getElementById('live');
    const running = state.running.map(best).filter(isRunning);
    live.setAttribute('data-running', String(running.length));
    const items = running.map((m) => {
        const elapsed = duration(m);
        const step = currentStep(m);
        const rate = isNum(elapsed) && elapsed > 0 && isNum(m.bytes_moved) ? m.bytes_moved / elapsed : null;
        const kv = (k, v, attrs) => el('span', attrs || {}, el('span', {class: 'k'}, k), v);
        const div = el('div', {class: 'run', 'data-migration-id': m.id, 'data-step': step,
                               'data-elapsed': isNum(elapsed) ? elapsed.toFixed(3) : null,
                               'data-bytes': isNum(m.bytes_moved) ? m.bytes_moved : null,
                               title: 'show its timeline'},
            badge('running'),
            el('span', {class: 'what'}, str(m.domain) + '  ' + hostsText(m)),
            kv('elapsed', fmtDuration(elapsed), {class: 'elapsed'}),
            kv('step', step, {class: 'step'}),
            kv('moved', fmtBytes(m.bytes_moved), {class: 'bytes', title: m.bytes_moved + ' bytes'}),
            rate !== null ? kv('average', fmtBytes(rate) + '/s', {class: 'rate'}) : null,
            kv('steps done', String(Array.isArray(m.steps) ? m.steps.length : 0), {class: 'count'}));
        div.addEventListener('click', () => select(m.id));
        return div;
    });
    if (items.length === 0)
        items.push(el('div', {class: 'idle'}, 'No migration running.'));
    live.replaceChildren(...items);
}

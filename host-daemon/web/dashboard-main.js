/* The dashboard's start: selection, the controls' handlers, first poll. */
/* Selecting a migration goes through the fragment (#...&id=...), so it can
 * be linked to and the back button returns to the previous one. */
function select(id) {
    if (ID_RE.test(id))
        go({id: id, page: state.view.page});
}

function takeView() {
    const before = state.view;
    state.view = viewFromLocation();
    state.chosen = state.view.id;
    /* A migration asked for (linked to, or clicked): its timeline is
     * brought into view once shown. */
    if (state.chosen !== null && (before === null || before.id !== state.chosen))
        state.reveal = true;
    /* Anything but the selection changes what the server is asked. */
    return before === null || ['host', 'domain', 'mode', 'result', 'range', 'page'].some(
        (k) => before[k] !== state.view[k]);
}

window.addEventListener('hashchange', () => {
    const changed = takeView();
    render();
    const id = state.chosen;
    if (changed || (id !== null && !state.details.has(id) && !state.missing.has(id)))
        refresh();
});

for (const [id, key] of [['f-host', 'host'], ['f-domain', 'domain'], ['f-mode', 'mode'],
                         ['f-result', 'result'], ['f-range', 'range']])
    document.getElementById(id).addEventListener('change', (ev) => go({[key]: ev.target.value}));
document.getElementById('f-clear').addEventListener('click', () =>
    go({host: '', domain: '', mode: '', result: '', range: DEFAULT_RANGE}));
document.getElementById('newer').addEventListener('click', () =>
    go({page: Math.max(1, state.view.page - 1), id: null}));
document.getElementById('older').addEventListener('click', () =>
    go({page: state.view.page + 1, id: null}));

let resizeTimer = 0;
window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(renderDetail, 100);
});

takeView();
refresh();

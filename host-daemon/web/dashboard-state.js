/* The dashboard's constants, its state, element and number helpers. */
'use strict';

/* How many migrations a page of the history shows, how many running ones
 * the live panel follows, and how often the page polls. */
const PAGE_SIZE = 50;
const RUNNING_LIMIT = 20;
const POLL_RUNNING_MS = 1000;
const POLL_IDLE_MS = 5000;
const FETCH_PARALLEL = 4;
const ID_RE = /^[A-Za-z0-9._-]{1,64}$/;
const RESULTS = ['running', 'ok', 'failed', 'rolled-back', 'remoting'];
const MODES = ['live', 'offline'];
/* The time ranges: seconds back from now, and the trend's buckets. */
const RANGES = {
    '24h': {seconds: 86400, buckets: 24},
    '7d': {seconds: 7 * 86400, buckets: 28},
    '30d': {seconds: 30 * 86400, buckets: 30},
    'all': {seconds: 0, buckets: 30},
};
const DEFAULT_RANGE = 'all';

const state = {
    list: [],              /* the page of /api/migrations, newest first */
    total: 0,              /* how many the filter takes in all */
    running: [],           /* running migrations, whatever the view */
    stats: null,           /* /api/stats for the view */
    pool: null,            /* /api/pool, or null */
    poolError: null,       /* why there is no pool view */
    details: new Map(),    /* id -> the migration with its steps */
    missing: new Set(),    /* ids asked for that the server does not know */
    view: null,            /* filters and page, from the fragment */
    chosen: null,          /* id from #id=..., or null: the newest */
    error: null,           /* the last poll's failure, shown in #status */
    updated: null,         /* when the last poll succeeded */
    timer: 0,
    polling: false,        /* a poll is under way */
    again: false,          /* poll again as soon as it ends */
    reveal: false,         /* scroll the timeline into view once shown */
};

/* --- small helpers --------------------------------------------------- */

/* An element TAG with attributes ATTRS (class, data-*, title, ...) and
 * CHILDREN (nodes, or strings that become text nodes). */
function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
        if (v !== null && v !== undefined)
            e.setAttribute(k, String(v));
    }
    for (const c of children) {
        if (c === null || c === undefined)
            continue;
        e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
}

function isNum(v) { return typeof v === 'number' && Number.isFinite(v); }
function str(v) { return typeof v === 'string' ? v : ''; }
function isHost(step) { return step.pid === null || step.pid === undefined || step.pid === 0; }
function isStoppage(step) { return !isHost(step) && (step.phase === 'pre' || step.phase === 'post'); }
function nowSeconds() { return Date.now() / 1000; }

/* Seconds as people read them: "850 µs", "12.3 ms", "4.21 s", "3 min 05 s". */
function fmtDuration(s) {
    if (!isNum(s))
        return '?';
    if (s < 0)
        return '-' + fmtDuration(-s);
    if (s === 0)
        return '0 s';
    if (s < 0.001)
        return (s * 1e6).toFixed(0) + ' µs';
    if (s < 1)
        return fmtMs(s);
    if (s < 10)
        return s.toFixed(2) + ' s';
    if (s < 60)
        return s.toFixed(1) + ' s';
    if (s < 3600) {
        const m = Math.floor(s / 60);
        return m + ' min ' + String(Math.floor(s - m * 60)).padStart(2, '0') + ' s';
    }
    const h = Math.floor(s / 3600);
    return h + ' h ' + String(Math.floor((s - h * 3600) / 60)).padStart(2, '0') + ' min';
}

/* Seconds in milliseconds, the unit of a program's stoppage. */
function fmtMs(s) {
    if (!isNum(s))
        return '?';
    const ms = s * 1000;
    const a = Math.abs(ms);
    return ms.toFixed(a < 10 ? 2 : a < 100 ? 1 : 0) + ' ms';
}

function fmtBytes(n) {
    if (!isNum(n) || n < 0)
        return '?';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
        n /= 1024;
        i++;
    }
    if (i === 0)
        return n + ' B';
    return n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0) + ' ' + units[i];
}

/* An epoch time in local time: "2026-03-01 14:05:09". */
function fmtTime(t) {
    if (!isNum(t))
        return '?';
    const d = new Date(t * 1000);
    const p = (v) => String(v).padStart(2, '0');
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) +
        ' ' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
}

function fmtTimeExact(t) {
    if (!isNum(t))
        return 'unknown';
    return new Date(t * 1000).toISOString() + ' (' + t + ' s since the epoch)';
}

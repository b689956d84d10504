/* BSO's dashboard: a jobs list and a job page, read from the server's read API (docs/api.md).
 * It needs no build step: plain browser JavaScript, with uPlot (window.uPlot) for the charts.
 * A self-contained report (bso report --html) sets window.BSO_REPORT to one job's data and the
 * page renders that job without a server. */
'use strict';

const ROOT = location.pathname.replace(/\/ui(\/.*)?$/, '');
const app = document.getElementById('app');

class AuthError extends Error {}

function token() { return localStorage.getItem('bso-token') || ''; }

async function api(path) {
  const headers = {};
  if (token()) headers.Authorization = 'Bearer ' + token();
  const r = await fetch(ROOT + path, { headers });
  if (r.status === 401) throw new AuthError('This server requires an API token (401).');
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((body.message || body.detail || r.statusText) + ' (' + r.status + ')');
  return body;
}

async function allJobs() {
  let jobs = [], after = null;
  do {
    const page = await api('/jobs?limit=100' + (after ? '&after=' + encodeURIComponent(after) : ''));
    jobs = jobs.concat(page.jobs);
    after = page.next_after;
  } while (after && jobs.length < 2000);
  return jobs;
}

async function allTrials(id) {
  let trials = [], after = null;
  do {
    const page = await api('/jobs/' + encodeURIComponent(id) + '/trials?limit=1000' +
                           (after !== null ? '&after=' + after : ''));
    trials = trials.concat(page.trials);
    after = page.next_after;
  } while (after !== null && after !== undefined);
  return trials;
}

/* ---- what a job's history says ----------------------------------------------------------- */

const mean = xs => xs.reduce((a, b) => a + b, 0) / xs.length;
const sd = xs => { const m = mean(xs); return Math.sqrt(mean(xs.map(x => (x - m) ** 2))); };

/* Per batch size: the converged runs and their costs (what reaching the target cost); plus the job's totals against always
 * running the default batch size (whose converged runs give its mean cost, energy and time). */
function summarize(job, trials) {
  const spec = job.spec;
  const sizes = {};
  for (const bs of spec.batch_sizes) sizes[bs] = { bs, costs: [], converged: [], all: 0 };
  for (const t of trials) {
    const s = sizes[t.batch_size];
    if (!s) continue;
    s.all++;
    if (t.converged) { s.converged.push(t); s.costs.push(t.cost); } // the cost of reaching the target
  }
  const finished = trials.filter(t => t.cost !== null && t.cost !== undefined);
  const converged = trials.filter(t => t.converged);
  const def = converged.filter(t => t.batch_size === spec.default_batch_size);
  let best = null;
  for (const s of Object.values(sizes)) {
    if (!s.converged.length) continue;
    s.meanCost = mean(s.converged.map(t => t.cost));
    if (!best || s.meanCost < best.meanCost) best = s;
  }
  const out = { sizes, best: best ? best.bs : null, trials, converged: converged.length,
                last: trials.reduce((a, t) => Math.max(a, Date.parse(t.end_timestamp || t.start_timestamp) || 0), 0) };
  if (def.length && converged.length) {
    out.defaultCost = mean(def.map(t => t.cost));
    out.defaultEnergy = mean(def.map(t => t.energy));
    out.defaultTime = mean(def.map(t => t.time));
    const spent = finished.reduce((a, t) => a + t.cost, 0);
    out.savings = 1 - spent / (converged.length * out.defaultCost);
  }
  return out;
}

/* What the bso policy says of size bs (GET /jobs/ID's batch_size_stats), or undefined. */
function sizeStat(job, bs) {
  return (job.batch_size_stats || []).find(s => s.batch_size === bs);
}

/* Whether size bs starts failed because it never reached in the job this one was transferred
 * from, and has not run here since: its status says what the old job found. */
function failedBeforeTransfer(job, bs) {
  const stat = sizeStat(job, bs);
  return !!(job.transferred_from && stat && stat.status === 'failed' && stat.runs === 0);
}

/* The epochs a transferred job inherited at bs, while it has not reached there itself; null
 * otherwise (`bso show` prints the same in brackets). */
function inheritedEpochs(job, bs) {
  const stat = sizeStat(job, bs);
  return job.transferred_from && stat && stat.prior_epochs > 0 && stat.mean_epochs === null ? stat.prior_epochs : null;
}

/* Each size's status: what the policy says of it. */
function sizeStatus(job, bs) {
  if ((job.unfit_batch_sizes || []).includes(bs)) return 'unfit';
  if ((job.infeasible_batch_sizes || []).includes(bs)) return 'infeasible';
  const stat = sizeStat(job, bs);
  if (stat) return stat.diverged ? 'diverged' : stat.status; /* bounds nothing: tried again */
  if (job.stage === 'MAB' && job.arms && !job.arms.some(a => a.batch_size === bs)) return 'pruned';
  return job.arms && job.arms.some(a => a.batch_size === bs) ? 'arm' : 'untried';
}

/* The posterior interval of a size's mean cost (95%): a Zeus arm's Gaussian on -cost. */
function posterior(job, bs) {
  const arm = (job.arms || []).find(a => a.batch_size === bs);
  if (!arm) return null;
  const m = -arm.param_mean;
  if (arm.param_precision === null) return [m, m];
  const h = 1.96 / Math.sqrt(arm.param_precision);
  return [m - h, m + h];
}

/* ---- rendering helpers ------------------------------------------------------------------- */

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

const fmt = (x, d = 1) => x === null || x === undefined || Number.isNaN(x) ? '–' :
  Math.abs(x) >= 1e5 ? x.toExponential(2) : x.toFixed(d);
const pct = x => x === undefined ? '–' : (x >= 0 ? '' : '−') + Math.abs(100 * x).toFixed(1) + '%';
const when = ms => ms ? new Date(ms).toISOString().replace('T', ' ').slice(0, 19) : '–';

function showError(e) {
  app.replaceChildren(el('div', { class: 'error', id: 'error', text: e.message }));
  if (e instanceof AuthError) document.getElementById('token-form').hidden = false;
}

/* A chart: series drawn as points (lines: false) or lines; `points` counts the data points
 * drawn, for the tests. */
function chart(title, xs, series, opts = {}) {
  const box = el('div', { class: 'chart', 'data-title': title }, el('h3', { text: title }));
  const n = series.reduce((a, s) => a + s.data.filter(v => v !== null && v !== undefined).length, 0);
  box.setAttribute('data-points', String(n));
  if (!window.uPlot) {
    box.append(el('p', { class: 'muted', text: 'Charts need the charting library (built without npm).' }));
    return box;
  }
  const u = new uPlot({
    width: 540, height: 260,
    scales: { x: { time: false } },
    axes: [{ label: opts.xLabel || '', values: opts.xValues }, { label: opts.yLabel || '', size: 85 }],
    series: [{}].concat(series.map(s => ({
      label: s.label, stroke: s.color, width: s.lines ? 2 : 0,
      fill: s.fill, dash: s.dash,
      points: { show: !s.lines, size: 7, fill: s.color, stroke: s.color },
      paths: s.lines ? undefined : () => null,
    }))),
    bands: opts.bands,
  }, [xs].concat(series.map(s => s.data)), box);
  box.chart = u;
  return box;
}

/* ---- pages ------------------------------------------------------------------------------- */

// The bso policy has no pruning stage: its wire stage (Zeus's names, for Zeus's clients) says
// only whether Thompson sampling has begun.
const stageName = (stage, policy) => policy === 'bso' ? (stage === 'MAB' ? 'Thompson sampling' : 'search') : stage;

async function jobsPage() {
  const jobs = await allJobs();
  const rows = await Promise.all(jobs.map(async j => {
    const [job, trials] = await Promise.all([api('/jobs/' + encodeURIComponent(j.job_id)),
                                             allTrials(j.job_id)]);
    return { j, job, sum: summarize(job, trials), stage: stageName(j.stage, job.spec.policy || 'zeus') };
  }));
  const filter = el('input', { type: 'search', id: 'filter', placeholder: 'Filter by job, GPU or stage' });
  const cols = [
    ['Job', r => r.j.job_id], ['Policy', r => r.job.spec.policy || 'zeus'], ['Stage', r => r.stage],
    ['GPU', r => r.j.gpu_model], ['Trials', r => r.j.trials, true],
    ['Best batch size', r => r.sum.best, true], ['Savings vs default', r => r.sum.savings, true],
    ['Last activity', r => r.sum.last],
  ];
  let sortCol = 0, asc = true;
  const table = el('table', { id: 'jobs' });
  const draw = () => {
    const q = filter.value.toLowerCase();
    const shown = rows.filter(r => !q || [r.j.job_id, r.j.gpu_model, r.stage].join(' ').toLowerCase().includes(q));
    const key = cols[sortCol][1];
    shown.sort((a, b) => {
      const x = key(a), y = key(b);
      const c = x === y ? 0 : x === undefined || x === null ? 1 : y === undefined || y === null ? -1 : x < y ? -1 : 1;
      return asc ? c : -c;
    });
    const head = el('tr', {}, ...cols.map(([name, , num], i) => {
      const th = el('th', { class: (num ? 'num ' : '') + (i === sortCol ? (asc ? 'sorted-asc' : 'sorted-desc') : ''), text: name });
      th.onclick = () => { asc = sortCol === i ? !asc : true; sortCol = i; draw(); };
      return th;
    }));
    table.replaceChildren(el('thead', {}, head), el('tbody', {}, ...shown.map(r => el('tr', { class: 'job-row' },
      el('td', {}, el('a', { href: '#/jobs/' + encodeURIComponent(r.j.job_id), text: r.j.job_id })),
      el('td', { text: r.job.spec.policy || 'zeus' }),
      // A job whose target no size is expected to reach within max_epochs: its page says more.
      el('td', { class: 'stage' }, r.stage, ...(r.j.target_out_of_reach ? [' ', el('span', { class: 'tag unreachable',
        title: 'No batch size is expected to reach the target within max_epochs', text: 'target out of reach' })] : [])),
      el('td', { text: r.j.gpu_model }), el('td', { class: 'num', text: String(r.j.trials) }),
      el('td', { class: 'num', text: r.sum.best === null ? '–' : String(r.sum.best) }),
      el('td', { class: 'num ' + (r.sum.savings > 0 ? 'good' : r.sum.savings < 0 ? 'bad' : ''), text: pct(r.sum.savings) }),
      el('td', { text: when(r.sum.last) })))));
  };
  filter.oninput = draw;
  draw();
  app.replaceChildren(el('h1', { text: 'Jobs (' + rows.length + ')' }), filter, table);
}

function jobView(job, trials) {
  const sum = summarize(job, trials);
  const spec = job.spec;
  const sizes = spec.batch_sizes.slice().sort((a, b) => a - b);
  const cards = el('div', { class: 'cards' },
    ...[['Stage', stageName(job.stage, spec.policy || 'zeus')], ['Policy', spec.policy || 'zeus'], ['Trials', trials.length],
        ['Best batch size', sum.best === null ? '–' : sum.best],
        ['Default batch size', spec.default_batch_size],
        ['Savings vs default', pct(sum.savings)]].map(([k, v]) => el('div', { class: 'card' }, k, el('b', { text: String(v) }))));

  // Cost per batch size: observed mean and spread, posterior interval, status.
  const obs = sizes.map(bs => sum.sizes[bs].costs.length ? mean(sum.sizes[bs].costs) : null);
  const lo = sizes.map(bs => sum.sizes[bs].costs.length ? Math.min(...sum.sizes[bs].costs) : null);
  const hi = sizes.map(bs => sum.sizes[bs].costs.length ? Math.max(...sum.sizes[bs].costs) : null);
  const post = sizes.map(bs => posterior(job, bs));
  const expected = sizes.map(bs => {
    const s = sizeStat(job, bs);
    return s && s.expected_cost !== null ? s.expected_cost : null;
  });
  const xs = sizes.map((_, i) => i);
  const xValues = (u, ticks) => ticks.map(t => sizes[t] === undefined ? '' : String(sizes[t]));
  const costSeries = [
    { label: 'mean cost of converged runs', data: obs, color: '#2458c6' },
    { label: 'lowest', data: lo, color: '#9bb3e6' },
    { label: 'highest', data: hi, color: '#9bb3e6' },
  ];
  if (post.some(p => p)) {
    costSeries.push({ label: 'posterior 2.5%', data: post.map(p => p && p[0]), color: '#e37400' });
    costSeries.push({ label: 'posterior 97.5%', data: post.map(p => p && p[1]), color: '#e37400' });
  }
  if (expected.some(x => x !== null))
    costSeries.push({ label: 'expected cost (policy)', data: expected, color: '#137333' });
  const costChart = chart('Cost per batch size', xs, costSeries, { xLabel: 'batch size', yLabel: 'cost', xValues });
  costChart.id = 'chart-cost';
  costChart.setAttribute('data-sizes', String(sizes.length));

  // Trial timeline: converged, early-stopped (final, not converged), failed (at 0).
  const nums = trials.map(t => t.trial_number);
  const pick = f => trials.map(t => f(t) ? (t.cost === null ? 0 : t.cost) : null);
  const timeline = chart('Trials: cost per recurrence', nums, [
    { label: 'converged', data: pick(t => t.converged), color: '#137333' },
    { label: 'stopped early', data: pick(t => t.status === 'Succeeded' && !t.converged), color: '#e37400' },
    { label: 'failed (no report)', data: pick(t => t.status === 'Failed'), color: '#b3261e' },
  ], { xLabel: 'trial', yLabel: 'cost' });
  timeline.id = 'chart-timeline';
  const bsChart = chart('Trials: batch size', nums, [
    { label: 'batch size', data: trials.map(t => t.batch_size), color: '#2458c6' }], { xLabel: 'trial', yLabel: 'batch size' });
  bsChart.id = 'chart-batch-size';

  // Runs whose batch size changed while they trained (they report samples and mean batch
  // size): each epoch's own batch size, for the latest five such runs.
  const adaptive = trials.filter(t => t.progress && t.progress.length).slice(-5);
  const runCharts = [];
  if (adaptive.length) {
    const epochs = Math.max(...adaptive.flatMap(t => t.progress.map(p => p.epoch)));
    const xsEpoch = Array.from({ length: epochs }, (_, i) => i + 1);
    const palette = ['#2458c6', '#137333', '#e37400', '#8e24aa', '#b3261e'];
    const runChart = chart('Batch size during the latest runs', xsEpoch, adaptive.map((t, i) => {
      const at = new Map(t.progress.map(p => [p.epoch, p.batch_size]));
      return { label: `trial ${t.trial_number} (given ${t.batch_size})`, color: palette[i], lines: true,
               data: xsEpoch.map(e => at.has(e) ? at.get(e) : null) };
    }), { xLabel: 'epoch', yLabel: 'samples per step' });
    runChart.id = 'chart-run-batch';
    runCharts.push(runChart);
  }

  // Cumulative energy and time against always running the default.
  const cum = (key) => { let a = 0; return trials.map(t => (a += t[key] || 0)); };
  const base = (per) => { let n = 0; return trials.map(t => per === undefined ? null : (n += t.converged ? 1 : 0) * per); };
  const energy = chart('Cumulative energy (J) vs always default', nums, [
    { label: 'BSO', data: cum('energy'), color: '#2458c6', lines: true },
    { label: 'always default', data: base(sum.defaultEnergy), color: '#778', lines: true, dash: [6, 4] },
  ], { xLabel: 'trial', yLabel: 'J' });
  energy.id = 'chart-energy';
  const time = chart('Cumulative time (s) vs always default', nums, [
    { label: 'BSO', data: cum('time'), color: '#2458c6', lines: true },
    { label: 'always default', data: base(sum.defaultTime), color: '#778', lines: true, dash: [6, 4] },
  ], { xLabel: 'trial', yLabel: 's' });
  time.id = 'chart-time';

  const table = el('table', { id: 'sizes' }, el('thead', {}, el('tr', {},
    ...['Batch size', 'Status', 'Runs', 'Converged', 'Mean cost (converged)', 'Spread (sd)', 'Posterior 95%'].map(h => el('th', { text: h })))),
    el('tbody', {}, ...sizes.map(bs => {
      const s = sum.sizes[bs], st = sizeStatus(job, bs), p = posterior(job, bs);
      const inherited = inheritedEpochs(job, bs);
      const status = failedBeforeTransfer(job, bs)
        ? el('span', { class: 'tag ' + st + ' carried', text: st + ' (in ' + job.transferred_from.job_id + ')',
                       title: 'It never reached in ' + job.transferred_from.job_id + ', its runs there running out of epochs; not run here yet.' })
        : inherited !== null
        ? el('span', { class: 'tag ' + st + ' inherited', text: st + ' (' + fmt(inherited) + ' epochs in ' + job.transferred_from.job_id + ')',
                       title: 'Epochs to the target in ' + job.transferred_from.job_id + ': a prior here until a run here reaches.' })
        : el('span', { class: 'tag ' + st, text: st });
      return el('tr', {}, el('td', { class: 'num', text: String(bs) }), el('td', {}, status),
        el('td', { class: 'num', text: String(s.all) }), el('td', { class: 'num', text: String(s.converged.length) }),
        el('td', { class: 'num', text: s.costs.length ? fmt(mean(s.costs)) : '–' }),
        el('td', { class: 'num', text: s.costs.length > 1 ? fmt(sd(s.costs)) : '–' }),
        el('td', { class: 'num', text: p ? fmt(p[0]) + ' – ' + fmt(p[1]) : '–' }));
    })));

  // Power limits: what each limit measured in a size's first epoch, and the one kept.
  const profiles = job.power_profiles || [];
  const power = profiles.length ? [el('h2', { text: 'Power limits' }),
    el('p', { class: 'muted', text: 'Profiled in the first epoch of a batch size; later runs of that size set the chosen limit.' }),
    el('table', { id: 'power' }, el('thead', {}, el('tr', {},
      ...['Batch size', 'Limit (W)', 'Samples/s', 'Power (W)', 'Cost per sample', 'Chosen', 'Device'].map(h => el('th', { text: h })))),
      el('tbody', {}, ...profiles.flatMap(p => p.measurements.map(m => {
        const chosen = m.power_limit === p.power_limit;
        return el('tr', { class: chosen ? 'chosen' : '' },
          el('td', { class: 'num', text: String(p.batch_size) }), el('td', { class: 'num', text: fmt(m.power_limit, 0) }),
          el('td', { class: 'num', text: fmt(m.samples_per_s) }), el('td', { class: 'num', text: fmt(m.power) }),
          el('td', { class: 'num', text: fmt(m.cost_per_sample, 4) }), el('td', { text: chosen ? '✓' : '' }),
          el('td', { text: p.device }));
      }))))] : [];

  // Where the job came from (bso transfer) and when the policy last found that it changed.
  const origin = [];
  if (job.transferred_from)
    origin.push(el('p', { id: 'origin' }, 'Started from the epochs of ',
      el('a', { href: '#/jobs/' + encodeURIComponent(job.transferred_from.job_id), text: job.transferred_from.job_id }),
      ` at ${job.transferred_from.batch_sizes} batch sizes (${job.transferred_from.at}); costs per epoch measured here.`));
  if (job.change_detected_at_trial)
    origin.push(el('p', { id: 'changed', class: 'muted',
      text: `The job changed: found after trial ${job.change_detected_at_trial}; what was learnt before weighs as one run per size.` }));

  if (job.data_version)
    origin.push(el('p', { id: 'data-version', class: 'muted',
      text: `Data version ${job.data_version.version} (since ${job.data_version.since}).` }));
  if (job.change_declared_at_trial)
    origin.push(el('p', { id: 'declared', class: 'muted',
      text: `The job changed after trial ${job.change_declared_at_trial}, its user says: the next run at each size it knows decides whether that matters there.` }));

  // A change not found yet, but building: the size whose runs went furthest towards one, from
  // half the alarm on (as `bso show` says it); not after a declared change, which is why.
  const building = job.change_declared_at_trial ? null : (job.batch_size_stats || []).reduce(
    (a, s) => (s.change_evidence || 0) > (a ? a.change_evidence : 0.5) ? s : a, null);
  if (building)
    origin.push(el('p', { id: 'building', class: 'muted',
      text: `The job may be changing: the runs at batch size ${building.batch_size} are ` +
            `${Math.round(100 * building.change_evidence)}% of the way to saying so.` }));

  // No size reached the target since the last model, and none is expected to: say so first.
  const reach = job.target_out_of_reach;
  if (reach)
    origin.unshift(el('p', { id: 'out-of-reach', class: 'warning',
      text: `No batch size reached the target ${reach.since_trial ? 'since trial ' + reach.since_trial : 'since the job started'} ` +
            `(${reach.trials} trials), and none is expected to within max_epochs: raise max_epochs or check target_metric.` +
            (reach.next_pass_after == null ? '' : reach.next_pass_after > 0
              ? ` The job never trained: its sizes run again after ${reach.next_pass_after} more refused request(s) for a batch size.`
              : ' The job never trained: the next request for a batch size starts another pass over its sizes.') }));

  return [el('h1', { id: 'job-title', text: job.job_id }), ...origin, cards,
          el('div', { class: 'charts' }, costChart, timeline, bsChart, ...runCharts, energy, time),
          el('h2', { text: 'Batch sizes' }), table, ...power,
          el('h2', { text: 'Specification' }), el('pre', { id: 'spec', text: JSON.stringify(spec, null, 2) })];
}

async function jobPage(id) {
  const [job, trials] = await Promise.all([api('/jobs/' + encodeURIComponent(id)), allTrials(id)]);
  app.replaceChildren(el('p', {}, el('a', { href: '#/', text: '← all jobs' })), ...jobView(job, trials));
}

async function route() {
  try {
    if (window.BSO_REPORT) {
      app.replaceChildren(...jobView(window.BSO_REPORT.job, window.BSO_REPORT.trials));
      app.setAttribute('data-ready', '1');
      return;
    }
    const m = location.hash.match(/^#\/jobs\/(.+)$/);
    if (m) await jobPage(decodeURIComponent(m[1])); else await jobsPage();
    app.setAttribute('data-ready', '1');
  } catch (e) {
    showError(e);
    app.setAttribute('data-ready', 'error');
  }
}

document.getElementById('token-form').onsubmit = ev => {
  ev.preventDefault();
  localStorage.setItem('bso-token', document.getElementById('token').value);
  document.getElementById('token-form').hidden = true;
  route();
};
window.addEventListener('hashchange', () => { app.removeAttribute('data-ready'); route(); });
route();

// Browser checks of bso-server's dashboard with headless Chromium (Debian's) driven by
// playwright-core: node dashboard.mjs URL EXPECTED.json OUT_DIR [TOKEN].
// EXPECTED.json (written by tests/blackbox/test_dashboard.py from the API) lists every job with
// its trial count and batch sizes; screenshots go to OUT_DIR. Exit status 0 when all checks pass.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const require = createRequire(process.env.BSO_WEB_MODULES + '/');
const { chromium } = require('playwright-core');

const [url, expectedPath, outDir, token] = process.argv.slice(2);
const expected = JSON.parse(fs.readFileSync(expectedPath, 'utf8'));
const failures = [];
const check = (ok, what) => { console.log((ok ? 'ok   ' : 'FAIL ') + what); if (!ok) failures.push(what); };

const browser = await chromium.launch({
  executablePath: process.env.BSO_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));

  // Without a token where tokens are required: the API refuses, the page says so.
  if (token) {
    await page.goto(url + '/ui/');
    await page.waitForSelector('#app[data-ready="error"]', { timeout: 15000 });
    check((await page.textContent('#error')).includes('401'), 'no token: the page shows the 401');
    check(await page.isVisible('#token-form'), 'no token: the token form is shown');
    check((await page.$$('tr.job-row')).length === 0, 'no token: no job is listed');
    await page.screenshot({ path: path.join(outDir, 'refused.png') });
    await page.fill('#token', token);
    await page.click('#token-form button');
  } else {
    await page.goto(url + '/ui/');
  }

  // The jobs list: every job, sortable and filterable.
  await page.waitForSelector('#app[data-ready="1"] #jobs', { timeout: 30000 });
  const ids = await page.$$eval('tr.job-row td:first-child', tds => tds.map(td => td.textContent));
  check(ids.length === expected.jobs.length, `jobs list shows ${ids.length} of ${expected.jobs.length} jobs`);
  check(expected.jobs.every(j => ids.includes(j.job_id)), 'jobs list has every job id');
  const tagged = await page.$$eval('tr.job-row:has(.tag.unreachable) td:first-child', tds => tds.map(td => td.textContent));
  const unreachable = expected.jobs.filter(j => j.out_of_reach).map(j => j.job_id);
  check(tagged.length === unreachable.length && unreachable.every(id => tagged.includes(id)),
    `jobs list tags ${unreachable.join(', ')} as out of reach, and no other`);
  // The stage in words: a bso job's is its search or Thompson sampling, not Zeus's Pruning.
  const stages = await page.$$eval('tr.job-row', trs => Object.fromEntries(trs.map(tr =>
    [tr.querySelector('td:first-child').textContent, tr.querySelector('td.stage').firstChild.textContent])));
  check(expected.jobs.every(j => stages[j.job_id] === j.stage),
    `jobs list says each job's stage (${expected.jobs.map(j => j.job_id + ': ' + stages[j.job_id]).join(', ')})`);
  await page.screenshot({ path: path.join(outDir, 'jobs.png'), fullPage: true });
  await page.click('th:has-text("Trials")');
  const trialsAsc = await page.$$eval('tr.job-row td:nth-child(5)', tds => tds.map(td => Number(td.textContent)));
  check(trialsAsc.every((x, i) => i === 0 || trialsAsc[i - 1] <= x), 'sorting by trials orders the rows');
  const one = expected.jobs[0];
  await page.fill('#filter', one.job_id);
  check((await page.$$('tr.job-row')).length === 1, 'the filter keeps the one matching job');
  await page.fill('#filter', '');

  // A job page per job: charts with the right number of points, statuses, the spec.
  for (const job of expected.jobs) {
    await page.click(`tr.job-row a[href="#/jobs/${encodeURIComponent(job.job_id)}"]`);
    await page.waitForSelector('#app[data-ready="1"] #job-title', { timeout: 30000 });
    check((await page.textContent('#job-title')) === job.job_id, `${job.job_id}: its page opens`);
    const points = async id => Number(await page.getAttribute('#' + id, 'data-points'));
    check(await points('chart-batch-size') === job.trials, `${job.job_id}: batch-size timeline has ${job.trials} points`);
    check(await points('chart-timeline') === job.trials, `${job.job_id}: cost timeline marks all ${job.trials} trials`);
    check(Number(await page.getAttribute('#chart-cost', 'data-sizes')) === job.batch_sizes, `${job.job_id}: cost chart spans ${job.batch_sizes} sizes`);
    check((await page.$$('.chart canvas')).length >= 5, `${job.job_id}: five charts drawn`);
    check((await page.$$('#sizes tbody tr')).length === job.batch_sizes, `${job.job_id}: a row per batch size`);
    check((await page.$$('#sizes .tag.diverged')).length === job.diverged, `${job.job_id}: ${job.diverged} sizes tagged diverged`);
    check((await page.$$('#sizes .tag.carried')).length === job.carried, `${job.job_id}: ${job.carried} sizes failed before the transfer`);
    check((await page.$$('#sizes .tag.inherited')).length === job.inherited, `${job.job_id}: ${job.inherited} sizes show the epochs they inherited`);
    check((await page.$$('#power tr.chosen')).length === job.power_profiles, `${job.job_id}: ${job.power_profiles} chosen power limits`);
    check(JSON.parse(await page.textContent('#spec')).default_batch_size === job.default_batch_size, `${job.job_id}: the spec`);
    const runPoints = await page.$('#chart-run-batch') ? await points('chart-run-batch') : 0;
    check(runPoints === (job.progress_points || 0), `${job.job_id}: ${job.progress_points || 0} points of batch size during runs`);
    const reach = await page.$('#out-of-reach');
    check(job.out_of_reach ? reach !== null : reach === null,
      `${job.job_id}: ${job.out_of_reach ? 'warns that the target is out of reach' : 'no reach warning'}`);
    if (reach)
      check((await reach.textContent()).includes('The job never trained') === (job.next_pass_after != null),
        `${job.job_id}: ${job.next_pass_after != null ? 'says when its sizes run again' : 'no pass to wait for (it trained before)'}`);
    const building = await page.$('#building');
    check(job.building ? building !== null &&
      (await building.textContent()).includes(`the runs at batch size ${job.building} are`) : building === null,
      `${job.job_id}: ${job.building ? 'a change building at ' + job.building : 'no change building'}`);
    const declared = await page.$('#declared');
    check(job.declared ? declared !== null &&
      (await declared.textContent()).includes(`changed after trial ${job.declared}, its user says`) : declared === null,
      `${job.job_id}: ${job.declared ? 'a change its user declared' : 'no declared change'}`);
    const version = await page.$('#data-version');
    check(job.data_version ? version !== null &&
      (await version.textContent()).includes(`Data version ${job.data_version} (since `) : version === null,
      `${job.job_id}: ${job.data_version ? 'data version ' + job.data_version : 'no data version'}`);
    const origin = await page.$('#origin a');
    check(job.origin ? origin !== null && (await origin.textContent()) === job.origin : origin === null,
      `${job.job_id}: ${job.origin ? 'transferred from ' + job.origin : 'no origin'}`);
    if (job === expected.jobs[expected.jobs.length - 1] || job.screenshot)
      await page.screenshot({ path: path.join(outDir, 'job-' + job.job_id.replace(/[^A-Za-z0-9._-]/g, '_') + '.png'), fullPage: true });
    await page.click('a[href="#/"]');
    await page.waitForSelector('#app[data-ready="1"] #jobs', { timeout: 30000 });
  }
  // The self-contained report (bso report JOB --html FILE): the same job page from a file,
  // with nothing fetched from anywhere.
  if (process.env.BSO_REPORT_FILE) {
    const job = expected.jobs.find(j => j.job_id === process.env.BSO_REPORT_JOB);
    const report = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const requests = [];
    report.on('request', r => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
    report.on('pageerror', e => errors.push(String(e)));
    await report.goto('file://' + path.resolve(process.env.BSO_REPORT_FILE));
    await report.waitForSelector('#app[data-ready="1"] #job-title', { timeout: 30000 });
    check((await report.textContent('#job-title')) === job.job_id, 'report: the job page');
    check(Number(await report.getAttribute('#chart-batch-size', 'data-points')) === job.trials, 'report: every trial drawn');
    check((await report.$$('.chart canvas')).length >= 5, 'report: five charts drawn');
    check(requests.length === 0, 'report: no network requests' + (requests.length ? ': ' + requests.join(' ') : ''));
    await report.screenshot({ path: path.join(outDir, 'report.png'), fullPage: true });
  }
  check(errors.length === 0, 'no script errors' + (errors.length ? ': ' + errors.join('; ') : ''));
} finally {
  await browser.close();
}
if (failures.length) {
  console.log(failures.length + ' check(s) failed');
  process.exit(1);
}
console.log('all dashboard checks passed');

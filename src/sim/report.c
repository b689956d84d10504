/* Running a replay plan and writing its figures; see report.h. */
#include "sim/report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/spec.h"

static void add_phase(struct sim_phase_cell *c, const struct sim_phase_result *r, int64_t n_seeds)
{
    const double per_seed = 1.0 / (double)n_seeds;
    c->first = r->first;
    c->n = r->n;
    c->oracle = r->oracle;
    c->optimum = r->optimum;
    /* No size reaches the target in this phase: there is no oracle to compare with. */
    c->ratio += isfinite(r->oracle) ? r->cost / ((double)r->n * r->oracle) * per_seed : NAN;
    c->no_model += r->no_model;
    c->no_model_floor += r->no_model_floor;
    c->stopped += (double)r->stopped / (double)r->n * per_seed;
    c->lag += (double)r->lag * per_seed;
    c->never += r->lag == r->n;
    c->changes_found += r->changes_found;
    c->gave_up += r->gave_up;
    c->refused += r->refused;
}

/* The arm's name in the tables and in --decisions' last column, e.g. "bso/max+transfer". */
static const char *arm_name(const struct sim_plan *p, size_t a, char *buf, size_t cap)
{
    const struct sim_arm *arm = &p->arms[a];
    static const char *const moves[] = {"", "+fresh", "+transfer"};
    snprintf(buf, cap, "%s/%s%s%s", bso_policy_name(arm->policy), arm->jit ? "jit" : "max",
             arm->profile ? "+probe" : "", moves[arm->move]);
    return buf;
}

int sim_plan_run(struct sim_plan *plan, char *err, size_t errcap)
{
    const int64_t n_seeds = plan->seed_last - plan->seed_first + 1;
    const int64_t n = plan->opt.recurrences;
    for (size_t j = 0; j < plan->n_jobs; j++) {
        for (size_t a = 0; a < plan->n_arms; a++) {
            struct sim_cell *cell = &plan->cells[j][a];
            struct sim_options opt = plan->opt;
            opt.policy = plan->arms[a].policy;
            opt.jit = plan->arms[a].jit;
            opt.profile = plan->arms[a].profile;
            opt.transfer = plan->arms[a].move == 2;
            char name[32];
            opt.arm = arm_name(plan, a, name, sizeof name);
            sim_reference_costs(&plan->jobs[j], opt.eta, opt.jit, &cell->oracle, &cell->base);
            cell->curve = calloc((size_t)n, sizeof(double));
            if (!cell->curve) {
                snprintf(err, errcap, "out of memory");
                return -1;
            }
            double sum = 0, sum2 = 0;
            for (int64_t s = plan->seed_first; s <= plan->seed_last; s++) {
                struct sim_result res;
                opt.seed = s;
                if (sim_run(&plan->jobs[j], &opt, &res, err, errcap) < 0) {
                    free(res.cost);
                    return -1;
                }
                sum += res.cumulative;
                sum2 += res.cumulative * res.cumulative;
                cell->n_phases = res.n_phases;
                for (size_t k = 0; k < res.n_phases; k++)
                    add_phase(&cell->phase[k], &res.phase[k], n_seeds);
                cell->settle += (double)res.settle / (double)n_seeds;
                cell->failed += (double)res.failed_runs / (double)n_seeds;
                for (int64_t r = 0; r < n; r++)
                    cell->curve[r] += res.cost[r] / (double)n_seeds;
                free(res.cost);
            }
            cell->mean = sum / (double)n_seeds;
            double var = sum2 / (double)n_seeds - cell->mean * cell->mean;
            cell->sd = var > 0 ? sqrt(var) : 0;
        }
    }
    return 0;
}

void sim_plan_free(struct sim_plan *plan)
{
    for (size_t j = 0; j < plan->n_jobs; j++)
        for (size_t a = 0; a < plan->n_arms; a++)
            free(plan->cells[j][a].curve);
}

static double vs_oracle(const struct sim_plan *p, const struct sim_cell *c)
{
    return c->mean / ((double)p->opt.recurrences * c->oracle);
}

static double vs_base(const struct sim_plan *p, const struct sim_cell *c)
{
    return c->mean / ((double)p->opt.recurrences * c->base);
}

/* The line that warns of recurrences given up at the launch cap (sim_phase_result.gave_up),
 * if there are any. */
static void print_gave_up(FILE *f, const char *name, int64_t gave_up)
{
    if (gave_up > 0)
        fprintf(f,
                "%-14s %-6s %-13s %lld recurrences given up after %d runs without a model: they "
                "cost only their runs, so the ratio flatters them\n",
                "", "", name, (long long)gave_up, SIM_MAX_LAUNCHES);
}

void sim_print_table(const struct sim_plan *p, FILE *f)
{
    fprintf(f, "%-14s %-6s %-13s %10s %10s %9s %8s %7s\n", "workload", "gpu", "policy", "vs oracle",
            "vs base", "settle", "failed", "N");
    for (size_t a = 0; a < p->n_arms; a++) {
        char name[32];
        double log_o = 0, log_b = 0;
        int64_t gave_up = 0, found = 0;
        for (size_t j = 0; j < p->n_jobs; j++) {
            const struct sim_cell *c = &p->cells[j][a];
            fprintf(f, "%-14s %-6s %-13s %10.4f %10.4f %9.1f %8.2f %7lld\n", p->jobs[j].w.dataset,
                    p->jobs[j].gpu, arm_name(p, a, name, sizeof name), vs_oracle(p, c),
                    vs_base(p, c), c->settle, c->failed, (long long)p->opt.recurrences);
            log_o += log(vs_oracle(p, c));
            log_b += log(vs_base(p, c));
            for (size_t k = 0; k < c->n_phases; k++) {
                gave_up += c->phase[k].gave_up;
                found += c->phase[k].changes_found;
            }
        }
        fprintf(f, "%-14s %-6s %-13s %10.4f %10.4f\n", "geomean", "", name,
                exp(log_o / (double)p->n_jobs), exp(log_b / (double)p->n_jobs));
        print_gave_up(f, name, gave_up);
        if (p->arms[a].policy == BSO_POLICY_BSO) {
            fprintf(f, "%-14s %-6s %-13s changes found: %lld in %lld jobs%s\n", "", "", name,
                    (long long)found,
                    (long long)(p->n_jobs * (size_t)(p->seed_last - p->seed_first + 1)),
                    sim_plan_changes(p) ? "" : " (the traces do not change: false alarms)");
        }
        fputc('\n', f);
    }
}

bool sim_plan_changes(const struct sim_plan *p)
{
    return p->n_jobs > 0 && p->n_arms > 0 && p->cells[0][0].n_phases > 1;
}

void sim_print_changes(const struct sim_plan *p, FILE *f)
{
    fprintf(f, "%-14s %-6s %-13s %5s %9s %11s %9s %8s %7s %7s\n", "workload", "gpu", "policy",
            "phase", "from", "vs oracle", "no model", "stopped", "lag", "found");
    for (size_t a = 0; a < p->n_arms; a++) {
        char name[32];
        arm_name(p, a, name, sizeof name);
        double log_after = 0, worst_after = 0;
        int64_t no_model_after = 0, n_after = 0, refused = 0, unreachable = 0, gave_up = 0;
        double floor_after = 0;
        for (size_t j = 0; j < p->n_jobs; j++) {
            const struct sim_cell *c = &p->cells[j][a];
            for (size_t k = 0; k < c->n_phases; k++) {
                const struct sim_phase_cell *ph = &c->phase[k];
                char lag[32];
                char ratio[32];
                snprintf(lag, sizeof lag, ph->never ? "%.1f*" : "%.1f", ph->lag);
                snprintf(ratio, sizeof ratio, isfinite(ph->ratio) ? "%.4f" : "unreachable",
                         ph->ratio);
                fprintf(f, "%-14s %-6s %-13s %5zu %9lld %11s %9lld %8.2f %7s %7lld\n",
                        p->jobs[j].w.dataset, p->jobs[j].gpu, name, k, (long long)ph->first + 1,
                        ratio, (long long)ph->no_model, ph->stopped, lag,
                        (long long)ph->changes_found);
                if (k > 0 && !isfinite(ph->ratio)) {
                    unreachable++;
                } else if (k > 0) {
                    log_after += log(ph->ratio);
                    worst_after = ph->ratio > worst_after ? ph->ratio : worst_after;
                    no_model_after += ph->no_model;
                    floor_after += ph->no_model_floor;
                    gave_up += ph->gave_up;
                    refused += ph->refused;
                    n_after++;
                }
            }
        }
        char left_out[96] = "";
        if (unreachable > 0)
            snprintf(left_out, sizeof left_out,
                     "; %lld phases where no size reaches the target left out",
                     (long long)unreachable);
        char refusals[96] = "";
        if (refused > 0)
            snprintf(refusals, sizeof refusals,
                     " (%lld of them refused a batch size by the policy, at no cost)",
                     (long long)refused);
        if (n_after > 0) {
            fprintf(f,
                    "%-14s %-6s %-13s after a change: geomean %.4f, worst %.4f, %lld recurrences "
                    "without a model%s (%.1f to expect of any policy)%s\n",
                    "all", "", name, exp(log_after / (double)n_after), worst_after,
                    (long long)no_model_after, refusals, floor_after, left_out);
            print_gave_up(f, name, gave_up);
            fputc('\n', f);
        }
    }
    fprintf(f,
            "(lag: recurrences until sizes within %.0f%% of the phase's oracle trained %d in a "
            "row; * some seeds never did, counted as the whole phase; found: changes the policy "
            "found in the phase, over all seeds)\n",
            (SIM_NEAR_OPTIMAL - 1) * 100, SIM_SETTLED_RUN);
}

static FILE *open_out(const char *dir, const char *name, char *err, size_t errcap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        snprintf(err, errcap, "cannot write %s: %s", path, strerror(errno));
    return f;
}

/* Small multiples: one panel per workload x GPU, one line per (policy, power): cumulative
 * regret in units of the oracle's cost (how many extra recurrences' worth it paid). */
static void write_svg(const struct sim_plan *p, FILE *f)
{
    static const char *const colors[] = {"#d62728", "#1f77b4", "#ff7f0e", "#2ca02c",
                                         "#9467bd", "#8c564b", "#e377c2", "#17becf"};
    const int cols = 4, pw = 260, ph = 190, pad = 40;
    const int rows = (int)((p->n_jobs + (size_t)cols - 1) / (size_t)cols);
    const int width = cols * pw, height = rows * ph + 60; /* legend, then caption */
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height);
    for (size_t a = 0; a < p->n_arms; a++) {
        char name[32];
        fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", 10 + (int)a * 125,
                height - 32, colors[a % 8], arm_name(p, a, name, sizeof name));
    }
    const int64_t n = p->opt.recurrences;
    for (size_t j = 0; j < p->n_jobs; j++) {
        const int x0 = (int)(j % (size_t)cols) * pw + pad, y0 = (int)(j / (size_t)cols) * ph + 20;
        const int w = pw - pad - 10, h = ph - 50;
        double ymax = 0.5;
        for (size_t a = 0; a < p->n_arms; a++) {
            const struct sim_cell *c = &p->cells[j][a];
            double acc = 0;
            for (int64_t r = 0; r < n; r++) {
                acc += (c->curve[r] - c->oracle) / c->oracle;
                if (acc > ymax)
                    ymax = acc;
            }
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s / %s</text>\n", x0, y0 - 5, p->jobs[j].w.dataset,
                p->jobs[j].gpu);
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                "stroke=\"#999\"/>\n",
                x0, y0, w, h);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.1f</text>\n", x0 - 3, y0 + 10,
                ymax);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>\n", x0 - 3, y0 + h);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld</text>\n", x0 + w, y0 + h + 13,
                (long long)n);
        for (size_t a = 0; a < p->n_arms; a++) {
            const struct sim_cell *c = &p->cells[j][a];
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                    colors[a % 8]);
            double acc = 0;
            for (int64_t r = 0; r < n; r++) {
                acc += (c->curve[r] - c->oracle) / c->oracle;
                double y = acc < 0 ? 0 : acc;
                fprintf(f, "%.1f,%.1f ", x0 + (double)w * (double)(r + 1) / (double)n,
                        y0 + h - (double)h * y / ymax);
            }
            fprintf(f, "\"/>\n");
        }
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">cumulative regret, in oracle "
            "recurrences, vs recurrence</text>\n</svg>\n",
            width - 10, height - 12);
}

/* The arm's move to another GPU as the CSV files name it: fresh, transfer, or empty (none). */
static const char *move_name(const struct sim_arm *arm)
{
    static const char *const moves[] = {"", "fresh", "transfer"};
    return moves[arm->move];
}

int sim_write_outputs(const struct sim_plan *p, const char *dir, char *err, size_t errcap)
{
    FILE *s = open_out(dir, "summary.csv", err, errcap);
    if (!s)
        return -1;
    fprintf(s, "workload,gpu,policy,power,recurrences,seeds,cost_mean,cost_sd,oracle_cost,"
               "base_cost,ratio_vs_oracle,ratio_vs_base,settle_recurrences,failed_runs,"
               "profile,move\n");
    for (size_t a = 0; a < p->n_arms; a++)
        for (size_t j = 0; j < p->n_jobs; j++) {
            const struct sim_cell *c = &p->cells[j][a];
            const struct sim_arm *arm = &p->arms[a];
            fprintf(s, "%s,%s,%s,%s,%lld,%lld-%lld,%.6g,%.6g,%.6g,%.6g,%.6f,%.6f,%.2f,%.2f,%s,%s\n",
                    p->jobs[j].w.dataset, p->jobs[j].gpu, bso_policy_name(arm->policy),
                    arm->jit ? "jit" : "max", (long long)p->opt.recurrences,
                    (long long)p->seed_first, (long long)p->seed_last, c->mean, c->sd, c->oracle,
                    c->base, vs_oracle(p, c), vs_base(p, c), c->settle, c->failed,
                    arm->profile ? "probe" : "none", move_name(arm));
        }
    fclose(s);
    FILE *cv = open_out(dir, "curves.csv", err, errcap);
    if (!cv)
        return -1;
    fprintf(cv, "workload,gpu,policy,power,recurrence,mean_cost,cumulative_regret,profile,move\n");
    for (size_t a = 0; a < p->n_arms; a++)
        for (size_t j = 0; j < p->n_jobs; j++) {
            const struct sim_cell *c = &p->cells[j][a];
            const struct sim_arm *arm = &p->arms[a];
            double acc = 0;
            for (int64_t r = 0; r < p->opt.recurrences; r++) {
                acc += c->curve[r] - c->oracle;
                fprintf(cv, "%s,%s,%s,%s,%lld,%.6g,%.6g,%s,%s\n", p->jobs[j].w.dataset,
                        p->jobs[j].gpu, bso_policy_name(arm->policy), arm->jit ? "jit" : "max",
                        (long long)r + 1, c->curve[r], acc, arm->profile ? "probe" : "none",
                        move_name(arm));
            }
        }
    fclose(cv);
    if (sim_plan_changes(p)) {
        FILE *ch = open_out(dir, "changes.csv", err, errcap);
        if (!ch)
            return -1;
        fprintf(ch, "workload,gpu,policy,power,phase,first_recurrence,recurrences,oracle_cost,"
                    "ratio_vs_oracle,no_model,stopped_per_recurrence,lag,never_settled,profile,"
                    "move,optimum,changes_found,gave_up,no_model_floor,refused\n");
        for (size_t a = 0; a < p->n_arms; a++)
            for (size_t j = 0; j < p->n_jobs; j++) {
                const struct sim_cell *c = &p->cells[j][a];
                const struct sim_arm *arm = &p->arms[a];
                for (size_t k = 0; k < c->n_phases; k++) {
                    const struct sim_phase_cell *ph = &c->phase[k];
                    fprintf(ch,
                            "%s,%s,%s,%s,%zu,%lld,%lld,%.6g,%.6f,%lld,%.4f,%.2f,%lld,%s,%s,%lld,"
                            "%lld,%lld,%.2f,%lld\n",
                            p->jobs[j].w.dataset, p->jobs[j].gpu, bso_policy_name(arm->policy),
                            arm->jit ? "jit" : "max", k, (long long)ph->first + 1, (long long)ph->n,
                            ph->oracle, ph->ratio, (long long)ph->no_model, ph->stopped, ph->lag,
                            (long long)ph->never, arm->profile ? "probe" : "none", move_name(arm),
                            (long long)ph->optimum, (long long)ph->changes_found,
                            (long long)ph->gave_up, ph->no_model_floor, (long long)ph->refused);
                }
            }
        fclose(ch);
    }
    FILE *svg = open_out(dir, "regret.svg", err, errcap);
    if (!svg)
        return -1;
    write_svg(p, svg);
    fclose(svg);
    return 0;
}

"""Reads bso-bench --json lines (one per run) and prints the median of each figure."""
import json
import statistics
import sys

runs = [json.loads(line) for line in sys.stdin if line.strip()]


def med(f):
    return statistics.median(f(r) for r in runs)


print("runs %d (median)  throughput %.0f req/s  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f ms  "
      "errors %d" % (len(runs), med(lambda r: r["throughput_rps"]),
                     med(lambda r: r["latency_ms"]["p50"]), med(lambda r: r["latency_ms"]["p90"]),
                     med(lambda r: r["latency_ms"]["p99"]), med(lambda r: r["latency_ms"]["p999"]),
                     sum(r["errors"] for r in runs)))
if "server_peak_rss_mb" in runs[0]:
    print("server peak RSS %.1f MB  CPU %.1f us/request" % (
        med(lambda r: r["server_peak_rss_mb"]),
        med(lambda r: r["server_cpu_s"] / max(r["requests"], 1) * 1e6)))
if "verify_problems" in runs[0]:
    print("verify: %d problems" % sum(r["verify_problems"] for r in runs))
print("throughput of each run: " + ", ".join("%.0f" % r["throughput_rps"] for r in runs))

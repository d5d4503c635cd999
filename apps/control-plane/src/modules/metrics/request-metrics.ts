// The HTTP request figures (berth_http_request_duration_seconds and berth_http_requests_total)
// as one custom prom-client collector: a request adds to plain numbers of its label set, and
// the two series are built from them only when scraped. prom-client's own Histogram and
// Counter would validate and hash the label object and allocate on every request; the text
// written here is the same as theirs (same series, order, bucket bounds and values).
import type { Registry } from "prom-client";

interface Series {
  labels: { method: string; route: string; status_code: string };
  /** Requests per bucket (not cumulative), the last one past every bound (+Inf). */
  buckets: number[];
  sum: number;
  count: number;
}

interface Value {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
}

interface MetricData {
  name: string;
  help: string;
  type: "histogram" | "counter";
  values: Value[];
  aggregator: "sum";
}

export interface RequestMetrics {
  observe(method: string, route: string, statusCode: number, seconds: number): void;
}

export function createRequestMetrics(registry: Registry, opts: { duration: { name: string; help: string; buckets: number[] }; count: { name: string; help: string } }): RequestMetrics {
  const bounds = [...opts.duration.buckets].sort((a, b) => a - b);
  // route pattern -> method -> status code: strings the router already holds, no key built per request.
  const byRoute = new Map<string, Map<string, Map<number, Series>>>();
  let all: Series[] = [];

  const histogram = {
    name: opts.duration.name,
    help: opts.duration.help,
    type: "histogram" as const,
    aggregator: "sum" as const,
    reset() {
      byRoute.clear();
      all = [];
    },
    /** As prom-client's Histogram: the label set as shared labels of each line. */
    async getForPromString(): Promise<MetricData> {
      const name = opts.duration.name;
      const values: Value[] = [];
      for (const s of all) {
        let acc = 0;
        for (let i = 0; i < bounds.length; i++) {
          acc += s.buckets[i]!;
          values.push({ labels: { le: bounds[i]! }, sharedLabels: s.labels, value: acc, metricName: `${name}_bucket` });
        }
        values.push(
          { labels: { le: "+Inf" }, sharedLabels: s.labels, value: s.count, metricName: `${name}_bucket` },
          { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${name}_sum` },
          { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${name}_count` },
        );
      }
      return { name, help: opts.duration.help, type: "histogram", values, aggregator: "sum" };
    },
    async get(): Promise<MetricData> {
      const data = await histogram.getForPromString();
      data.values = data.values.map(({ sharedLabels, ...v }) => ({ ...v, labels: { ...sharedLabels, ...v.labels } }));
      return data;
    },
  };
  const counter = {
    name: opts.count.name,
    help: opts.count.help,
    type: "counter" as const,
    aggregator: "sum" as const,
    reset() {
      histogram.reset();
    },
    async get(): Promise<MetricData> {
      return { name: opts.count.name, help: opts.count.help, type: "counter", values: all.map((s) => ({ labels: s.labels, value: s.count })), aggregator: "sum" };
    },
  };
  registry.registerMetric(histogram as never);
  registry.registerMetric(counter as never);

  function seriesOf(method: string, route: string, statusCode: number): Series {
    let methods = byRoute.get(route);
    if (!methods) byRoute.set(route, (methods = new Map()));
    let codes = methods.get(method);
    if (!codes) methods.set(method, (codes = new Map()));
    let s = codes.get(statusCode);
    if (!s) {
      s = { labels: { method, route, status_code: String(statusCode) }, buckets: new Array<number>(bounds.length + 1).fill(0), sum: 0, count: 0 };
      codes.set(statusCode, s);
      all.push(s);
    }
    return s;
  }

  return {
    observe(method, route, statusCode, seconds) {
      if (!Number.isFinite(seconds)) return;
      const s = byRoute.get(route)?.get(method)?.get(statusCode) ?? seriesOf(method, route, statusCode);
      let i = 0;
      while (i < bounds.length && seconds > bounds[i]!) i++;
      s.buckets[i]! += 1;
      s.sum += seconds;
      s.count += 1;
    },
  };
}

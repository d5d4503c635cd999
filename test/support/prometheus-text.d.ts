// Types of parse-prometheus-text-format (it ships none): prom2json's shape.
declare module "parse-prometheus-text-format" {
  interface Sample {
    labels?: Record<string, string>;
    value?: string;
    /** Histograms: cumulative count per upper bound ("+Inf" included), and the count and sum. */
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  interface Family {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: Sample[];
  }
  export default function parsePrometheusTextFormat(text: string): Family[];
}

"""Parse a metrics file with prometheus_client's two parsers and print its samples as JSON.

The Prometheus text format parser (what node-exporter's textfile collector and the
Pushgateway read) and the OpenMetrics parser (strict: `# EOF`, types, names) must both accept
it and agree. Usage: parse_metrics.py FILE
"""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
from prometheus_client.parser import text_string_to_metric_families as prometheus

text = open(sys.argv[1], encoding="utf-8").read()


def samples(parse):
    out = []
    for family in parse(text):
        for s in family.samples:
            out.append({"family": family.name, "type": family.type, "name": s.name,
                        "labels": dict(s.labels), "value": s.value})
    return sorted(out, key=lambda s: (s["name"], sorted(s["labels"].items())))


prom = samples(prometheus)
om = samples(openmetrics)
if prom != om:
    sys.exit("the two parsers disagree:\n%s\n%s" % (prom, om))
print(json.dumps(prom))

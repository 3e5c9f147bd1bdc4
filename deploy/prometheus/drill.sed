# The drill's substitution (scripts/drill): the same rules with every window shortened so a
# saturation shows up in seconds, not minutes. Ranges and offsets 5m -> 30s (recording-rule names
# change with them, consistently), `for` 5m/1m -> 10s. Nothing else changes.
s/for: [0-9]*m$/for: 10s/
s/5m/30s/g

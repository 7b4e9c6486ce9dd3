// Quantities written back by the simulated provisioner, in the form `kubectl` users expect ("80Gi", not 85899345920).

const BINARY: [string, number][] = [
  ['Ei', 2 ** 60],
  ['Pi', 2 ** 50],
  ['Ti', 2 ** 40],
  ['Gi', 2 ** 30],
  ['Mi', 2 ** 20],
  ['Ki', 2 ** 10],
];

/** Formats a whole number of bytes with the largest binary suffix that divides it exactly. */
export function formatBytes(bytes: number): string {
  const n = Math.max(0, Math.round(bytes));
  if (n === 0) return '0';
  for (const [suffix, size] of BINARY) {
    if (n % size === 0) return `${n / size}${suffix}`;
  }
  return String(n);
}

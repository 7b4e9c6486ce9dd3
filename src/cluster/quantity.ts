// Kubernetes resource quantities ("100m", "1Gi", "1.5", "2e3") as numbers, after apimachinery's resource.Quantity.
// Storage sizes stay well inside a double's exact range (2^53 bytes = 8 PiB), which is all scheduling needs.

const SUFFIX: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$/;
/** The same rule as a JSON Schema pattern (surrounding blanks allowed, as parseQuantity trims them). */
export const QUANTITY_PATTERN = `^\\s*${QUANTITY.source.slice(1, -1)}\\s*$`;

export class QuantityError extends Error {
  constructor(value: unknown) {
    super(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got ${JSON.stringify(value)})`,
    );
    this.name = 'QuantityError';
  }
}

/** Parses a quantity into its value in base units (1 = one byte, one core, one count). Throws QuantityError. */
export function parseQuantity(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new QuantityError(value);
    return value;
  }
  const m = QUANTITY.exec(value.trim());
  if (!m) throw new QuantityError(value);
  const base = Number(m[1]);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  return base * SUFFIX[m[3] ?? ''];
}

/** A quantity in milli-units, rounded up as the API does for CPU ("1" → 1000, "100m" → 100, "0.0001" → 1). */
export function parseMilli(value: string | number): number {
  return Math.ceil(Math.round(parseQuantity(value) * 1e9) / 1e6);
}

/** Whole base units rounded up, as Quantity.Value() does ("1.5" → 2, "1Ki" → 1024). */
export function parseValue(value: string | number): number {
  return Math.ceil(parseQuantity(value) - 1e-9);
}

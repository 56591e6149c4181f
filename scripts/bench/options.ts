/**
 * Command-line options of the benchmarks: `--name=value` over typed defaults. A number default
 * takes a number, a list of numbers takes `1,16,64`, a boolean takes `--name` or `--name=false`,
 * a string takes any text. `--help` prints the script's usage and the defaults.
 */
type OptionValue = number | boolean | string | number[];
/** `false` as a default means a boolean option, `'full'` a string one: the literal types widen. */
type Options<T> = { [K in keyof T]: T[K] extends boolean ? boolean : T[K] extends string ? string : T[K] };

export function parseOptions<T extends Record<string, OptionValue>>(
  usage: string,
  defaults: T,
  argv: string[] = process.argv.slice(2),
): Options<T> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(`${usage.trim()}\n\noptions (defaults):`);
    for (const [name, value] of Object.entries(defaults)) console.log(`  --${name}=${String(value)}`);
    process.exit(0);
  }
  const options: Record<string, OptionValue> = { ...defaults };
  for (const arg of argv) {
    const match = /^--([a-zA-Z][\w-]*)(?:=(.*))?$/.exec(arg);
    const name = match?.[1];
    if (!match || name === undefined || !(name in defaults)) {
      throw new Error(`unknown option ${arg} (try --help)`);
    }
    options[name] = parseValue(name, defaults[name]!, match[2]);
  }
  return options as Options<T>;
}

function parseValue(name: string, fallback: OptionValue, text: string | undefined): OptionValue {
  const bad = () => new Error(`bad value for --${name}: ${text ?? '(none)'}`);
  if (typeof fallback === 'boolean') {
    if (text === undefined || text === 'true') return true;
    if (text === 'false') return false;
    throw bad();
  }
  if (text === undefined) throw bad();
  if (typeof fallback === 'string') return text;
  const numbers = text.split(',').map((part) => Number(part.replaceAll('_', '')));
  if (text === '' || numbers.some((n) => !Number.isFinite(n) || n < 0)) throw bad();
  if (Array.isArray(fallback)) return numbers;
  if (numbers.length !== 1) throw bad();
  return numbers[0]!;
}

// The `--gateway <url>` option value shared by the commands that talk to a running gateway.
import { InvalidArgumentError } from 'commander';
import { normalizeGatewayUrl } from '../runner/attempt-urls.js';

/** commander argParser: an http(s) URL, normalized to the gateway root; anything else is a usage error. */
export function parseGatewayUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http(s) URL, e.g. http://127.0.0.1:8080');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('expected http or https');
  return normalizeGatewayUrl(value);
}

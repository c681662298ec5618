// The trainer protocol's refusals (routes/rl.ts maps them onto HTTP statuses).
export class TrainerHubError extends Error {
  constructor(
    readonly code: 'not_found' | 'conflict' | 'unavailable',
    message: string,
  ) {
    super(message);
    this.name = 'TrainerHubError';
  }
}

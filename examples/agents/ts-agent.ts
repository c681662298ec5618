// A complete rollgate agent: `rollgate runner --gateway http://127.0.0.1:8080 -- npx tsx examples/agents/ts-agent.ts`
import OpenAI from 'openai';

const task = JSON.parse(process.env.ROLLGATE_TASK ?? '{}'); // e.g. {"question": "2+2?", "answer": "4"}
const client = new OpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY come from the runner
const completion = await client.chat.completions.create({
  model: process.env.ROLLGATE_MODEL ?? 'default',
  messages: [{ role: 'user', content: String(task.question) }],
});
const reward = completion.choices[0]?.message.content?.includes(String(task.answer)) ? 1 : 0;
const headers = { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY}` };
await fetch(process.env.ROLLGATE_REWARD_URL!, { method: 'POST', headers, body: JSON.stringify({ value: reward }) });

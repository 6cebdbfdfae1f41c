import { config } from 'zod/mini';
import english from 'zod/v4/locales/en.js';

// zod/mini loads no locale, so its issues would say only "Invalid input". The agent uses zod/mini alone (classic
// zod costs an idle agent ~8 MiB); svcd's classic zod sets the same locale as it loads.
config(english());

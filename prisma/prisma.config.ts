import { defineConfig } from 'prisma/config';

// The CLI is used only for `prisma generate` (our own db:migrate applies the committed SQL), so no
// datasource URL is needed. The generate script passes --schema for each provider's schema.
export default defineConfig({ schema: 'schema.prisma' });

import { IdentifierNode, OperationNodeTransformer } from 'kysely';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryId,
  QueryResult,
  RootOperationNode,
  TableNode,
  UnknownRow,
} from 'kysely';

/** Rewrites unqualified table names (in FROM, INTO, qualified column references, DDL) through a map. */
class TableNameTransformer extends OperationNodeTransformer {
  readonly #names: ReadonlyMap<string, string>;

  constructor(names: ReadonlyMap<string, string>) {
    super();
    this.#names = names;
  }

  protected override transformTable(node: TableNode, queryId?: QueryId): TableNode {
    const transformed = super.transformTable(node, queryId);
    const { table } = transformed;
    const real = table.schema ? undefined : this.#names.get(table.identifier.name);
    return real === undefined
      ? transformed
      : { ...transformed, table: { ...table, identifier: IdentifierNode.create(real) } };
  }
}

/**
 * A Kysely plugin that maps logical table names to configured ones, so queries over tables whose names come
 * from the configuration stay fully typed: write them against the logical names (`db.withTables<T>()`),
 * run them through this plugin. Every name is mapped once, so swapped names cannot chain.
 */
export class TableNamePlugin implements KyselyPlugin {
  readonly #transformer: TableNameTransformer;

  constructor(names: Readonly<Record<string, string>>) {
    this.#transformer = new TableNameTransformer(new Map(Object.entries(names)));
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node, args.queryId);
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }
}

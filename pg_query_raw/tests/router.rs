//! The router fast path reads what routing needs.
use pg_query_raw::router::{
    parse, Const, Distinct, Expr, Quantifier, Relation, StatementKind, Transaction,
};

fn one(sql: &str) -> pg_query_raw::router::Statement {
    let mut v = parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(v.len(), 1, "{sql}");
    v.remove(0)
}

fn col(table: Option<&str>, name: &str) -> Expr {
    Expr::Column {
        table: table.map(str::to_string),
        name: name.to_string(),
    }
}

#[test]
fn point_select_with_param() {
    let st = one("SELECT * FROM users WHERE id = $1");
    assert_eq!(st.kind, StatementKind::Select);
    assert_eq!(
        st.relations,
        vec![Relation {
            schema: None,
            name: "users".into(),
            alias: None
        }]
    );
    assert_eq!(st.targets[0].expr, Expr::Star { table: None });
    assert_eq!(
        st.where_clause,
        Some(Expr::Op {
            op: "=".into(),
            left: Some(Box::new(col(None, "id"))),
            right: Some(Box::new(Expr::Param(1))),
            quantifier: None
        })
    );
    assert_eq!(st.max_param, 1);
}

#[test]
fn aliases_schemas_casts_in_and_or() {
    let st = one("SELECT u.name FROM app.users AS u JOIN orders o ON o.user_id = u.id WHERE u.id IN (1, 2, $3) OR '5'::bigint = u.id AND u.x BETWEEN 1 AND 10");
    assert_eq!(
        st.relations[0],
        Relation {
            schema: Some("app".into()),
            name: "users".into(),
            alias: Some("u".into())
        }
    );
    assert_eq!(st.relations[1].alias.as_deref(), Some("o"));
    assert_eq!(st.join_conditions.len(), 1);
    let Some(Expr::Or(arms)) = &st.where_clause else {
        panic!("{:?}", st.where_clause)
    };
    let Expr::In {
        expr,
        list,
        negated: false,
    } = &arms[0]
    else {
        panic!("{:?}", arms[0])
    };
    assert_eq!(**expr, col(Some("u"), "id"));
    assert_eq!(
        list,
        &vec![
            Expr::Const(Const::Integer(1)),
            Expr::Const(Const::Integer(2)),
            Expr::Param(3)
        ]
    );
    let Expr::And(ands) = &arms[1] else { panic!() };
    let Expr::Op {
        left: Some(left), ..
    } = &ands[0]
    else {
        panic!()
    };
    assert_eq!(
        **left,
        Expr::Cast {
            expr: Box::new(Expr::Const(Const::String("5".into()))),
            type_name: "int8".into()
        }
    );
    assert!(matches!(
        &ands[1],
        Expr::Between {
            negated: false,
            symmetric: false,
            ..
        }
    ));
    assert_eq!(st.max_param, 3);
}

#[test]
fn order_limit_group_having_distinct_aggregates() {
    let st = one("SELECT DISTINCT a, count(*), avg(b) FROM t GROUP BY a HAVING sum(b) > 1 ORDER BY 1 DESC NULLS LAST, a LIMIT 10 OFFSET $1");
    assert_eq!(st.distinct, Distinct::All);
    assert_eq!(st.group_by, vec![col(None, "a")]);
    assert!(st.having.is_some());
    assert_eq!(st.order_by.len(), 2);
    assert!(st.order_by[0].descending && st.order_by[0].nulls_first == Some(false));
    assert_eq!(st.order_by[1].nulls_first, None);
    assert_eq!(st.limit, Some(Expr::Const(Const::Integer(10))));
    assert_eq!(st.offset, Some(Expr::Param(1)));
    let names: Vec<&str> = st.functions().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, vec!["count", "avg", "sum"]);
    assert!(st.functions()[0].star);
    let st = one("SELECT DISTINCT ON (a) a, rank() OVER (ORDER BY b) FROM t");
    assert_eq!(st.distinct, Distinct::On(vec![col(None, "a")]));
    assert!(st.functions()[0].window);
}

#[test]
fn insert_rows_returning_and_on_conflict() {
    let st = one("INSERT INTO s.t (id, v) VALUES (1, 'a'), ($1, NULL) ON CONFLICT DO NOTHING RETURNING id, v AS value");
    assert_eq!(st.kind, StatementKind::Insert);
    assert_eq!(st.relations[0].schema.as_deref(), Some("s"));
    assert_eq!(st.insert_columns, vec!["id", "v"]);
    assert_eq!(st.values.len(), 2);
    assert_eq!(st.values[1], vec![Expr::Param(1), Expr::Const(Const::Null)]);
    assert!(st.on_conflict);
    assert_eq!(st.returning[1].name.as_deref(), Some("value"));
    let st = one("INSERT INTO t SELECT * FROM u");
    assert!(st.values.is_empty() && st.insert_select.is_some());
}

#[test]
fn update_delete_and_any() {
    let st = one("UPDATE t SET v = v + 1, w = $2 WHERE id = ANY($1) RETURNING *");
    assert_eq!(st.kind, StatementKind::Update);
    assert_eq!(
        st.update_set
            .iter()
            .map(|t| t.name.clone().unwrap())
            .collect::<Vec<_>>(),
        vec!["v", "w"]
    );
    assert!(matches!(
        &st.where_clause,
        Some(Expr::Op {
            quantifier: Some(Quantifier::Any),
            ..
        })
    ));
    assert_eq!(st.max_param, 2);
    let st = one("DELETE FROM t USING u WHERE t.id = u.id");
    assert_eq!(st.kind, StatementKind::Delete);
    assert_eq!(st.relations.len(), 2);
}

#[test]
fn set_show_transactions_and_multi_statement() {
    let v = parse("BEGIN; SET LOCAL statement_timeout = '5s'; SET search_path TO a, b; RESET ALL; SHOW x; SAVEPOINT s1; COMMIT").unwrap();
    assert_eq!(v.len(), 7);
    assert_eq!(v[0].kind, StatementKind::Transaction(Transaction::Begin));
    let set = v[1].set.as_ref().unwrap();
    assert!(set.local && set.name.as_deref() == Some("statement_timeout"));
    assert_eq!(set.values, vec![Const::String("5s".into())]);
    assert_eq!(v[2].set.as_ref().unwrap().values.len(), 2);
    assert!(v[3].set.as_ref().unwrap().reset && v[3].set.as_ref().unwrap().name.is_none());
    assert_eq!(v[4].kind, StatementKind::Show);
    assert_eq!(
        v[5].kind,
        StatementKind::Transaction(Transaction::Savepoint("s1".into()))
    );
    assert_eq!(v[6].kind, StatementKind::Transaction(Transaction::Commit));
    assert_eq!(
        &"BEGIN; SET LOCAL statement_timeout = '5s'"[v[1].location..v[1].location + v[1].len],
        "SET LOCAL statement_timeout = '5s'"
    );
    let st = one("SET pgdog.shard = 1");
    assert_eq!(st.set.unwrap().values, vec![Const::Integer(1)]);
}

#[test]
fn subqueries_copy_and_utility() {
    let st = one("SELECT * FROM (SELECT id FROM a WHERE id = $2) s WHERE EXISTS (SELECT 1 FROM b)");
    assert_eq!(st.subqueries.len(), 1);
    assert!(matches!(&st.where_clause, Some(Expr::SubLink(_))));
    assert_eq!(st.max_param, 2);
    let st = one("COPY t (a, b) FROM STDIN WITH (FORMAT csv)");
    assert_eq!(st.kind, StatementKind::Copy { from: true });
    assert_eq!(st.insert_columns, vec!["a", "b"]);
    assert_eq!(
        one("CREATE TABLE x (id int)").kind,
        StatementKind::Utility("CreateStmt")
    );
    assert!(parse("SELEC 1").is_err());
}

#[test]
fn casts_say_when_the_type_has_a_modifier_or_is_an_array() {
    let names = |sql: &str| -> Vec<String> {
        let st = &parse(sql).unwrap()[0];
        st.targets
            .iter()
            .map(|t| match &t.expr {
                Expr::Cast { type_name, .. } => type_name.clone(),
                other => panic!("{sql}: {other:?}"),
            })
            .collect()
    };
    assert_eq!(
        names("SELECT 'a'::varchar, 'a'::varchar(2), 'a'::char, 'a'::bpchar, '{1}'::int[], 5::bigint, 'a'::text"),
        ["varchar", "varchar()", "bpchar()", "bpchar", "int4[]", "int8", "text"]
    );
}
